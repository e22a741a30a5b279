package safetensors

import (
	"bytes"
	"convrep/internal/shared"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// fixturesDir is ../shared/fixtures; a missing folder fails the test.
func fixturesDir(t testing.TB) string { return shared.MustPath(t, "fixtures") }

type manifest struct {
	Models map[string]struct {
		SafetensorsKeys []string `json:"safetensors_keys"`
	} `json:"models"`
	Files map[string]struct {
		Bytes int64 `json:"bytes"`
	} `json:"files"`
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// fixtureFiles lists every .safetensors file under the fixtures, relative to
// the fixtures dir, and checks the list against the manifest.
func fixtureFiles(t testing.TB) (string, []string) {
	t.Helper()
	fx := fixturesDir(t)
	var found []string
	err := filepath.WalkDir(fx, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".safetensors") {
			rel, _ := filepath.Rel(fx, p)
			found = append(found, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	readJSON(t, filepath.Join(fx, "MANIFEST.json"), &m)
	var listed []string
	for name := range m.Files {
		if strings.HasSuffix(name, ".safetensors") {
			listed = append(listed, name)
		}
	}
	sort.Strings(listed)
	sort.Strings(found)
	if !slices.Equal(found, listed) || len(found) != 7 {
		t.Fatalf("safetensors files on disk %v, in MANIFEST %v", found, listed)
	}
	return fx, found
}

func TestReadFixtures(t *testing.T) {
	fx, files := fixtureFiles(t)
	var m manifest
	readJSON(t, filepath.Join(fx, "MANIFEST.json"), &m)
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			path := filepath.Join(fx, rel)
			f, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := os.Stat(path); st.Size() != m.Files[rel].Bytes {
				t.Fatalf("size %d, MANIFEST says %d", st.Size(), m.Files[rel].Bytes)
			}
			if !slices.IsSortedFunc(f.Tensors, func(a, b Tensor) int { return strings.Compare(a.Name, b.Name) }) {
				t.Fatal("tensors not sorted by name")
			}
			if f.Metadata["format"] != "pt" {
				t.Errorf("metadata %v, want format=pt", f.Metadata)
			}
			dir, base := filepath.Split(rel)
			model := strings.TrimSuffix(dir, "/")
			// The fixtures' expected-output writer put __metadata__ last.
			if wantLast := base == "expected.safetensors" && model != "dse_loss"; f.MetadataLast != wantLast {
				t.Errorf("MetadataLast = %v, want %v", f.MetadataLast, wantLast)
			}
			switch {
			case base == "model.safetensors":
				checkModel(t, f, m.Models[model].SafetensorsKeys)
			case model == "dse_loss":
				checkDSE(t, f, filepath.Join(fx, "dse_loss", "expected.json"))
			default:
				checkSummaries(t, f, filepath.Join(fx, model, "expected.json"))
			}
		})
	}
}

func names(f *File) []string {
	var out []string
	for _, t := range f.Tensors {
		out = append(out, t.Name)
	}
	return out
}

// checkModel compares the key list with MANIFEST and checks the dtypes: only
// position_ids is integer.
func checkModel(t *testing.T, f *File, keys []string) {
	t.Helper()
	want := slices.Sorted(slices.Values(keys))
	if len(want) == 0 || !slices.Equal(names(f), want) {
		t.Fatalf("names %v, MANIFEST %v", names(f), want)
	}
	for _, tn := range f.Tensors {
		want := F32
		if strings.HasSuffix(tn.Name, "position_ids") {
			want = I64
		}
		if tn.DType != want {
			t.Errorf("%s: dtype %s, want %s", tn.Name, tn.DType, want)
		}
	}
}

// checkSummaries compares dtype, shape, sum and first/last values with the
// expected.json twin of a model's expected.safetensors.
func checkSummaries(t *testing.T, f *File, jsonPath string) {
	t.Helper()
	var exp struct {
		Summaries map[string]struct {
			DType         string  `json:"dtype"`
			Shape         []int64 `json:"shape"`
			Sum           float64 `json:"sum"`
			AbsSum        float64 `json:"abs_sum"`
			First5, Last5 []float64
		} `json:"summaries"`
	}
	readJSON(t, jsonPath, &exp)
	dtypes := map[string]DType{"float32": F32, "float64": F64, "int64": I64}
	checked := 0
	for name, s := range exp.Summaries {
		tn, ok := f.Lookup(name)
		if !ok {
			if name != "mlm_logits" { // summarised in full but stored trimmed
				t.Errorf("%s: summarised but not in the file", name)
			}
			continue
		}
		checked++
		if tn.DType != dtypes[s.DType] || !slices.Equal(tn.Shape, s.Shape) {
			t.Errorf("%s: %s %v, want %s %v", name, tn.DType, tn.Shape, s.DType, s.Shape)
			continue
		}
		vals := asFloat64s(t, tn)
		var sum, abs float64
		for _, v := range vals {
			sum += v
			abs += math.Abs(v)
		}
		if tol := 1e-9 * (1 + s.AbsSum); math.Abs(sum-s.Sum) > tol || math.Abs(abs-s.AbsSum) > tol {
			t.Errorf("%s: sum %v abs_sum %v, want %v %v", name, sum, abs, s.Sum, s.AbsSum)
		}
		if !slices.Equal(vals[:5], s.First5) || !slices.Equal(vals[len(vals)-5:], s.Last5) {
			t.Errorf("%s: first5 %v last5 %v, want %v %v", name, vals[:5], vals[len(vals)-5:], s.First5, s.Last5)
		}
	}
	if checked < 7 {
		t.Fatalf("only %d of %d summaries matched a tensor", checked, len(exp.Summaries))
	}
}

func asFloat64s(t *testing.T, tn Tensor) []float64 {
	t.Helper()
	var out []float64
	switch tn.DType {
	case F32:
		v, err := tn.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range v {
			out = append(out, float64(x))
		}
	case F64:
		v, err := tn.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		out = v
	case I64:
		v, err := tn.Int64s()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range v {
			out = append(out, float64(x))
		}
	default:
		t.Fatalf("%s: unexpected dtype %s", tn.Name, tn.DType)
	}
	return out
}

// checkDSE compares the DSE loss file with its JSON twin: the index of
// dtypes and shapes, the raw inputs in full, and every loss and gradient head.
func checkDSE(t *testing.T, f *File, jsonPath string) {
	t.Helper()
	type result struct {
		Loss         float64   `json:"loss"`
		GradF1First4 []float64 `json:"grad_f1_first4"`
	}
	var exp struct {
		Index map[string]struct {
			DType string  `json:"dtype"`
			Shape []int64 `json:"shape"`
		} `json:"tensor_index"`
		F1Raw   [][]float64                  `json:"f1_raw"`
		Results map[string]map[string]result `json:"results"`
	}
	readJSON(t, jsonPath, &exp)
	dtypes := map[string]DType{"float32": F32, "float64": F64, "int64": I64}
	if len(exp.Index) != len(f.Tensors) {
		t.Fatalf("%d tensors, index lists %d", len(f.Tensors), len(exp.Index))
	}
	for name, want := range exp.Index {
		tn, ok := f.Lookup(name)
		if !ok || tn.DType != dtypes[want.DType] || !slices.Equal(tn.Shape, want.Shape) {
			t.Errorf("%s: found=%v %s %v, want %s %v", name, ok, tn.DType, tn.Shape, want.DType, want.Shape)
		}
	}
	f1, _ := f.Lookup("f1_raw")
	got := asFloat64s(t, f1)
	var want []float64
	for _, row := range exp.F1Raw {
		want = append(want, row...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("f1_raw differs from expected.json")
	}
	for key, byKind := range exp.Results {
		for kind, r := range byKind {
			suffix := map[string]string{"normalized": "", "raw": "_raw"}[kind]
			// "HardNeg.f64" -> "loss.HardNeg.f64", "loss_raw.HardNeg.f64".
			loss, ok1 := f.Lookup("loss" + suffix + "." + key)
			grad, ok2 := f.Lookup("grad_f1" + suffix + "." + key)
			if !ok1 || !ok2 {
				t.Errorf("%s/%s: loss or grad missing", key, kind)
				continue
			}
			if v := asFloat64s(t, loss); len(v) != 1 || v[0] != r.Loss {
				t.Errorf("%s/%s: loss %v, want %v", key, kind, v, r.Loss)
			}
			if g := asFloat64s(t, grad); !slices.Equal(g[:4], r.GradF1First4) {
				t.Errorf("%s/%s: grad_f1 %v, want %v", key, kind, g[:4], r.GradF1First4)
			}
		}
	}
}

func TestPositionIDs(t *testing.T) {
	fx := fixturesDir(t)
	for _, tc := range []struct {
		model, name string
		n           int64
	}{
		{"tiny-bert", "bert.embeddings.position_ids", 64},
		{"tiny-roberta", "roberta.embeddings.position_ids", 66},
	} {
		f, err := ReadFile(filepath.Join(fx, tc.model, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		tn, ok := f.Lookup(tc.name)
		if !ok {
			t.Fatalf("%s: no %s", tc.model, tc.name)
		}
		if !slices.Equal(tn.Shape, []int64{1, tc.n}) {
			t.Fatalf("%s: shape %v", tc.name, tn.Shape)
		}
		ids, err := tn.Int64s()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range ids {
			if v != int64(i) {
				t.Fatalf("%s[%d] = %d", tc.name, i, v)
			}
		}
		if _, err := tn.Float32s(); err == nil || !strings.Contains(err.Error(), "dtype is I64, not F32") {
			t.Errorf("Float32s of an I64 tensor: %v", err)
		}
	}
}

// TestFixtureRoundTrip re-encodes every fixture and demands the original
// bytes, and checks that ReadHeader agrees with ReadFile.
func TestFixtureRoundTrip(t *testing.T) {
	fx, files := fixtureFiles(t)
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			path := filepath.Join(fx, rel)
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Parse(orig)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := f.Encode(&buf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), orig) {
				t.Fatalf("re-encoded %d bytes differ from the original %d (first difference at %d)",
					buf.Len(), len(orig), firstDiff(buf.Bytes(), orig))
			}
			meta, infos, err := ReadHeader(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(meta) != len(f.Metadata) || len(infos) != len(f.Tensors) {
				t.Fatalf("ReadHeader: %d meta %d infos, ReadFile: %d %d", len(meta), len(infos), len(f.Metadata), len(f.Tensors))
			}
			for i, info := range infos {
				tn := f.Tensors[i]
				if info.Name != tn.Name || info.DType != tn.DType || !slices.Equal(info.Shape, tn.Shape) ||
					info.End-info.Begin != int64(len(tn.Data)) {
					t.Fatalf("ReadHeader entry %+v vs tensor %s %s %v", info, tn.Name, tn.DType, tn.Shape)
				}
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
