package evaluate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestOOSAuthorsByPlainLoop recomputes the authors' protocol (amazon-research/dse, evaluate/run_similarity.py,
// eval_out_of_scope_detection, with test_util.py's test_oos) from the support sets the run wrote
// (--write-splits) and the session's own embeddings, by plain loops written from the Python, and wants the
// run's four figures for every shot count, seed and threshold.
func TestOOSAuthorsByPlainLoop(t *testing.T) {
	vec := map[string][]float32{
		"a1": {3, 0.2, 0}, "a2": {1, 0.9, 0.1}, "a3": {2, -0.3, 0.2}, "a4": {1, 0, 0},
		"b1": {0.1, 2, 0}, "b2": {0.8, 1, 0.3}, "b3": {-0.2, 1, 0}, "b4": {0, 1.5, -0.4},
		"c1": {0, 0.2, 1}, "c2": {0.5, 0, 2}, "c3": {-0.1, -0.4, 1}, "c4": {0.3, 0.3, 1},
		"o1": {-1, -1, -0.2}, "o2": {-0.5, -1, 0.6}, "o3": {-1, 0.2, -1}, "o4": {-0.7, -0.9, -0.1},
		"qa1": {1, 0.1, 0.05}, "qa2": {0.9, 0.6, -0.1}, "qa3": {0.7, 0.1, 0.6},
		"qb1": {0.2, 1, 0.1}, "qb2": {0.5, 0.7, 0.2}, "qc1": {0.1, 0.1, 1}, "qc2": {-0.3, 0.5, 0.8},
		"qo1": {-1, -0.8, 0}, "qo2": {0.4, -1, -0.3}, "qo3": {0.6, 0.5, 0.55}, "qo4": {-0.2, -0.2, -1},
	}
	train := Split{{"a1", "a"}, {"b1", "b"}, {"c1", "c"}, {"a2", "a"}, {"b2", "b"}, {"c2", "c"},
		{"a3", "a"}, {"b3", "b"}, {"c3", "c"}, {"a4", "a"}, {"b4", "b"}, {"c4", "c"}}
	oosTrain := Split{{"o1", "oos"}, {"o2", "oos"}, {"o3", "oos"}, {"o4", "oos"}}
	test := Split{{"qa1", "a"}, {"qa2", "a"}, {"qa3", "a"}, {"qb1", "b"}, {"qb2", "b"}, {"qc1", "c"}, {"qc2", "c"}}
	oos := Split{{"qo1", "oos"}, {"qo2", "oos"}, {"qo3", "oos"}, {"qo4", "oos"}}
	dir := t.TempDir()
	shots, seeds := []int{1, 2}, []uint64{0, 1, 2, 3, 4, 5}
	s := &Session{Model: "table", Enc: &tableEncoder{vecs: vec}}
	res, err := s.OOS(context.Background(), OOSTask{Dataset: "toy", Source: "toy.json#train+oos_train", Train: train, Test: test, OOS: oos,
		OOSTrain: oosTrain, Protocol: OOSAuthors, Shots: shots, Seeds: seeds, Splits: SplitIO{Write: dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != len(shots)*3*4 || len(res.Notes) != 1 || res.Notes[0] != OOSAuthorsNote {
		t.Fatalf("%d rows, notes %q", len(res.Rows), res.Notes)
	}
	got := map[string][]float64{}
	for _, r := range res.Rows {
		if r.Settings["protocol"] != OOSAuthors {
			t.Errorf("row %s %s: protocol %v", r.Variant, r.Metric, r.Settings["protocol"])
		}
		got[r.Variant+" "+r.Metric] = r.Values
	}

	// The authors' files: the training rows with the out-of-scope ones last (label 150 in clinc150_all).
	all := append(append(Split{}, train...), oosTrain...)
	names := []string{"a", "b", "c", "oos"}
	class := map[string]int{"a": 0, "b": 1, "c": 2, "oos": 3}
	const oosClass = 3
	queries := append(append(Split{}, test...), oos...)
	q, err := s.Embed(context.Background(), texts(queries)) // normalize(query_embedding)
	if err != nil {
		t.Fatal(err)
	}
	varied := false
	for _, k := range shots {
		for si, seed := range seeds {
			var sf struct {
				Support []struct {
					Label string `json:"label"`
					Rows  []int  `json:"rows"`
				} `json:"support"`
			}
			data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("toy-oos-authors-k%d-seed%d.json", k, seed)))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &sf); err != nil {
				t.Fatal(err)
			}
			// prototype_embedding[cat] = support_embedding[labels == cat].mean(axis=0), over normalised rows.
			proto := make([][3]float64, len(names))
			count := make([]int, len(names))
			for _, set := range sf.Support {
				for _, r := range set.Rows {
					if all[r].Label != set.Label {
						t.Fatalf("split file row %d has label %q, listed under %q", r, all[r].Label, set.Label)
					}
					v := vec[all[r].Text]
					n := math.Sqrt(float64(v[0])*float64(v[0]) + float64(v[1])*float64(v[1]) + float64(v[2])*float64(v[2]))
					c := class[set.Label]
					for d := 0; d < 3; d++ {
						proto[c][d] += float64(v[d]) / n
					}
					count[c]++
				}
			}
			for c := range proto {
				if count[c] == 0 {
					t.Fatalf("k=%d seed %d: class %s has no support", k, seed, names[c])
				}
				for d := 0; d < 3; d++ {
					proto[c][d] /= float64(count[c])
				}
			}
			// sim_matrix = normalize(query_embedding @ prototype_embedding.T); max_values = sim_matrix.max(axis=1)
			maxv := make([]float64, len(queries))
			arg := make([]int, len(queries))
			for i := range queries {
				row := make([]float64, len(names))
				var ss float64
				for c := range names {
					for d := 0; d < 3; d++ {
						row[c] += float64(q[i][d]) * proto[c][d]
					}
					ss += row[c] * row[c]
				}
				arg[i], maxv[i] = 0, math.Inf(-1)
				for c := range row {
					if v := row[c] / math.Sqrt(ss); v > maxv[i] {
						arg[i], maxv[i] = c, v
					}
				}
			}
			var mean, sq float64
			for _, m := range maxv {
				mean += m
			}
			mean /= float64(len(maxv))
			for _, m := range maxv {
				sq += (m - mean) * (m - mean)
			}
			std := math.Sqrt(sq / float64(len(maxv))) // numpy's std: population
			for j, th := range []float64{mean - std, mean, mean + std} {
				// preds[i] = sim.argmax() if sim.max() > cur_threshold else 150; then test_oos.
				var correct, inN, inCorrect, bin, tp, fn int
				for i, e := range queries {
					pred := oosClass
					if maxv[i] > th {
						pred = arg[i]
					}
					gold := class[e.Label]
					if pred == gold {
						correct++
					}
					if (pred == oosClass) == (gold == oosClass) {
						bin++
					}
					if gold != oosClass {
						inN++
						if pred == gold {
							inCorrect++
						}
					} else if pred == oosClass {
						tp++
					} else {
						fn++
					}
				}
				want := map[string]float64{
					"accuracy":     float64(correct) / float64(len(queries)),
					"in_accuracy":  float64(inCorrect) / float64(inN),
					"oos_accuracy": float64(bin) / float64(len(queries)),
					"oos_recall":   float64(tp) / float64(tp+fn),
				}
				if want["accuracy"] != 0 && want["accuracy"] != 1 {
					varied = true
				}
				variant := fmt.Sprintf("%d-shot, threshold=%s, authors", k, []string{"mean-std", "mean", "mean+std"}[j])
				for metric, w := range want {
					vals := got[variant+" "+metric]
					if len(vals) != len(seeds) {
						t.Fatalf("%s %s: %d values", variant, metric, len(vals))
					}
					if math.Abs(vals[si]-w) > 1e-12 {
						t.Errorf("%s seed %d %s = %v, the plain loop gives %v", variant, seed, metric, vals[si], w)
					}
				}
			}
		}
	}
	if !varied {
		t.Error("every accuracy is 0 or 1: the fixture tests nothing")
	}
}

func TestOOSAuthorsMetrics(t *testing.T) {
	// Classes 0, 1 in scope, 2 out of scope.
	cases := []struct {
		name       string
		pred, gold []int
		want       OOSResult
	}{
		{"all right", []int{0, 1, 2}, []int{0, 1, 2}, OOSResult{1, 1, 1, 1}},
		// In-scope query 0 flagged, in-scope 1 wrong intent, oos 2 caught, oos 3 taken for intent 0.
		{"mixed", []int{2, 0, 2, 0}, []int{0, 1, 2, 2}, OOSResult{Accuracy: 0.25, InAccuracy: 0, OOSAccuracy: 0.5, OOSRecall: 0.5}},
		// The out-of-scope prototype wins the arg-max for an in-scope query: wrong, and a false out-of-scope.
		{"oos prototype", []int{2, 1, 1}, []int{0, 1, 2}, OOSResult{Accuracy: 1.0 / 3, InAccuracy: 0.5, OOSAccuracy: 1.0 / 3, OOSRecall: 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := OOSAuthorsMetrics(c.pred, c.gold, 2)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
	for _, bad := range []struct{ pred, gold []int }{{[]int{0}, []int{0}}, {[]int{2}, []int{2}}, {[]int{0, 1}, []int{0}}} {
		if _, err := OOSAuthorsMetrics(bad.pred, bad.gold, 2); err == nil {
			t.Errorf("pred %v gold %v: no error", bad.pred, bad.gold)
		}
	}
}

func TestNormalizeRows(t *testing.T) {
	m := [][]float64{{3, 4}, {0, 0}, {-2, 0}}
	normalizeRows(m)
	want := [][]float64{{0.6, 0.8}, {0, 0}, {-1, 0}}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", m, want)
	}
}
