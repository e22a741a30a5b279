package dse

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sugarme/gotch/ts"

	"convrep/checkpoint"
	"convrep/internal/torch"
	"convrep/objectives"
	"convrep/objectives/internal/testutil"
	"convrep/safetensors"
)

type fixedEncoder [][]float32

func (f fixedEncoder) Embed(texts []string) ([][]float32, error) { return f[:len(texts)], nil }

func writeHead(t *testing.T, tensors map[string]safetensors.Tensor) string {
	t.Helper()
	var list []safetensors.Tensor
	for name, x := range tensors {
		x.Name = checkpoint.ParamPrefix + name
		list = append(list, x)
	}
	path := filepath.Join(t.TempDir(), "step-000000025.safetensors")
	if err := safetensors.WriteFile(path, nil, list); err != nil {
		t.Fatal(err)
	}
	return path
}

func f32(t *testing.T, shape []int64, v ...float32) safetensors.Tensor {
	t.Helper()
	x, err := safetensors.FromFloat32s("", shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// The head is torch.nn.Linear's y = x·Wᵀ twice with a ReLU between: W1 = [[1,2],[−3,1]], W2 = [[1,−1]]; for
// x = (1,1): W1·x = (3,−2), ReLU (3,0), W2·(3,0) = 3; for x = (−1,2): (3,5) → (3,5) → −2.
func TestHeadMapsThroughBothLayers(t *testing.T) {
	path := writeHead(t, map[string]safetensors.Tensor{
		"contrast_head.0.weight": f32(t, []int64{2, 2}, 1, 2, -3, 1),
		"contrast_head.2.weight": f32(t, []int64{1, 2}, 1, -1),
	})
	head, err := readHead(path, "contrast_head")
	if err != nil {
		t.Fatal(err)
	}
	h := head.Over(fixedEncoder{{1, 1}, {-1, 2}}).(*evalHead)
	got, err := h.Embed([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0]) != 1 || got[0][0] != 3 || got[1][0] != -2 {
		t.Errorf("head outputs %v, want [[3] [-2]]", got)
	}
	// The same head over another encoder: x = (−1,2) first gives −2; the first head keeps its encoder.
	other, err := h.Over(fixedEncoder{{-1, 2}}).Embed([]string{"c"})
	if err != nil || len(other) != 1 || other[0][0] != -2 || h.Enc.(fixedEncoder)[0][0] != 1 {
		t.Errorf("Over: %v, %v; the first head's encoder %v", other, err, h.Enc)
	}
}

func TestReadHeadRejects(t *testing.T) {
	for _, c := range []struct {
		name    string
		tensors map[string]safetensors.Tensor
		want    string
	}{
		{"no head", map[string]safetensors.Tensor{"bert.x": f32(t, []int64{1}, 1)}, `no head named "contrast_head"`},
		{"second layer missing", map[string]safetensors.Tensor{"contrast_head.0.weight": f32(t, []int64{2, 2}, 1, 2, 3, 4)}, "contrast_head.2.weight"},
		{"mismatched layers", map[string]safetensors.Tensor{
			"contrast_head.0.weight": f32(t, []int64{2, 2}, 1, 2, 3, 4),
			"contrast_head.2.weight": f32(t, []int64{1, 3}, 1, 2, 3),
		}, "want [d,d] and [out,d]"},
		{"a vector", map[string]safetensors.Tensor{
			"contrast_head.0.weight": f32(t, []int64{4}, 1, 2, 3, 4),
			"contrast_head.2.weight": f32(t, []int64{1, 2}, 1, 2),
		}, "want a matrix"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeHead(t, c.tensors)
			_, err := readHead(path, "contrast_head")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want one naming %s and %q", err, path, c.want)
			}
		})
	}
	path := writeHead(t, map[string]safetensors.Tensor{
		"contrast_head.0.weight": f32(t, []int64{2, 2}, 1, 2, -3, 1),
		"contrast_head.2.weight": f32(t, []int64{1, 2}, 1, -1),
	})
	h, err := readHead(path, "contrast_head")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Over(fixedEncoder{{1, 1, 1}}).Embed([]string{"a"}); err == nil || !strings.Contains(err.Error(), "3 values") {
		t.Errorf("an embedding of the wrong size: %v", err)
	}
}

type rows [][]float32

func (r rows) Embed(texts []string) ([][]float32, error) { return r[:len(texts)], nil }

// The evaluation head, which evaluates through the head a checkpoint holds, computes what the objective's own
// head computes: the head's weights written as a checkpoint writes them, read back through objectives.HeadAt.
func TestEvaluateHeadIsTheObjectivesHead(t *testing.T) {
	m := testutil.TinyBERT(t, 4)
	h, err := newContrastHead(m, dseHead, 5, HeadInitUniform)
	if err != nil {
		t.Fatal(err)
	}
	d := m.Config.HiddenSize
	var tensors []safetensors.Tensor
	for _, name := range []string{dseHead + ".0.weight", dseHead + ".2.weight"} {
		p, err := m.VS.Root().Get(name)
		if err != nil {
			t.Fatal(err)
		}
		st, err := torch.ToSafetensor(checkpoint.ParamPrefix+name, p)
		if err != nil {
			t.Fatal(err)
		}
		tensors = append(tensors, st)
	}
	path := filepath.Join(t.TempDir(), "step-000000001.safetensors")
	if err := safetensors.WriteFile(path, nil, tensors); err != nil {
		t.Fatal(err)
	}
	in := make([]float32, 3*d)
	for i := range in {
		in[i] = float32(math.Sin(float64(i)))
	}
	x := ts.MustOfSlice(in).MustView([]int64{3, d}, true)
	want := h.forward(x).Float64Values(true)
	x.MustDrop()
	eh, err := objectives.HeadAt(path, dseHead)
	if err != nil {
		t.Fatal(err)
	}
	got, err := eh.Over(rows{in[:d], in[d : 2*d], in[2*d:]}).Embed([]string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	for n := range 3 {
		for j := range 5 {
			if diff := math.Abs(float64(got[n][j]) - want[n*5+j]); diff > 1e-5 {
				t.Fatalf("row %d output %d: the evaluation head %v, the objective's head %v", n, j, got[n][j], want[n*5+j])
			}
		}
	}
}
