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

// TestResponseEnsembleByPlainLoop: two members score the same candidate lists (read back from --write-splits);
// the plain loop takes each member's cosines, its softmax over the query's candidates, the mean of the two
// (MGT Eq. 7), and ranks the truth (ties last); the ensemble's four figures must match for every seed.
func TestResponseEnsembleByPlainLoop(t *testing.T) {
	texts := []string{"q0", "q1", "q2", "q3", "q4", "q5", "r0", "r1", "r2", "r3", "r4", "r5"}
	// Member one sees the first two coordinates sharply, member two the last two; each gets some queries wrong.
	one := map[string][]float32{}
	two := map[string][]float32{}
	for i, x := range texts {
		a := float64(i)
		one[x] = []float32{float32(math.Cos(a)), float32(math.Sin(a)), float32(math.Cos(2 * a))}
		two[x] = []float32{float32(math.Sin(3 * a)), float32(math.Cos(a / 2)), float32(math.Sin(a))}
	}
	set := &RetrievalSet{Dataset: "toy", Source: "toy.jsonl",
		Contexts:  [][]string{{"q0"}, {"q1"}, {"q2"}, {"q3"}, {"q4"}, {"q5"}},
		Responses: []string{"r0", "r1", "r2", "r3", "r4", "r5"}}
	dir := t.TempDir()
	seeds := []uint64{3, 4, 5}
	task := ResponseTask{Set: set, Size: 4, Seeds: seeds, Splits: SplitIO{Write: dir}}
	open := func(name string, vecs map[string][]float32) OpenMember {
		return func(context.Context) (*Session, error) {
			return &Session{Model: name, Enc: &tableEncoder{vecs: vecs}}, nil
		}
	}
	res, err := ResponseEnsemble(context.Background(), "ensemble(one, two)", []OpenMember{open("one", one), open("two", two)}, task)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]float64{}
	for _, r := range res.Rows {
		got[r.Metric] = r.Values
	}
	cos := func(vecs map[string][]float32, a, b string) float64 {
		var d, na, nb float64
		for k := range vecs[a] {
			x, y := float64(vecs[a][k]), float64(vecs[b][k])
			d, na, nb = d+x*y, na+x*x, nb+y*y
		}
		return d / math.Sqrt(na*nb)
	}
	differs := false
	for si, seed := range seeds {
		var sf struct {
			Candidates []struct {
				Query  int   `json:"query"`
				Rows   []int `json:"rows"`
				Answer int   `json:"answer"`
			} `json:"candidates"`
		}
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("toy-response-k4-seed%d.json", seed)))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &sf); err != nil {
			t.Fatal(err)
		}
		var top1, top3, top10, mrr float64
		for _, c := range sf.Candidates {
			var p [2][]float64
			for m, vecs := range []map[string][]float32{one, two} {
				var z float64
				for _, r := range c.Rows {
					z += math.Exp(cos(vecs, set.Contexts[c.Query][0], set.Responses[r]))
				}
				for _, r := range c.Rows {
					p[m] = append(p[m], math.Exp(cos(vecs, set.Contexts[c.Query][0], set.Responses[r]))/z)
				}
			}
			mean := make([]float64, len(c.Rows))
			for j := range mean {
				mean[j] = (p[0][j] + p[1][j]) / 2
			}
			rank, rank0, rank1 := 1, 1, 1
			for j := range mean {
				if j == c.Answer {
					continue
				}
				if mean[j] >= mean[c.Answer]-1e-15 {
					rank++
				}
				if p[0][j] >= p[0][c.Answer] {
					rank0++
				}
				if p[1][j] >= p[1][c.Answer] {
					rank1++
				}
			}
			if rank != rank0 || rank != rank1 {
				differs = true
			}
			if rank == 1 {
				top1++
			}
			if rank <= 3 {
				top3++
			}
			if rank <= 10 {
				top10++
			}
			mrr += 1 / float64(rank)
		}
		n := float64(len(sf.Candidates))
		for metric, want := range map[string]float64{"top1": top1 / n, "top3": top3 / n, "top10": top10 / n, "mrr": mrr / n} {
			if math.Abs(got[metric][si]-want) > 1e-12 {
				t.Errorf("seed %d %s = %v, the plain loop gives %v", seed, metric, got[metric][si], want)
			}
		}
	}
	if !differs {
		t.Error("the ensemble ranks every truth as both members do: the fixture tests nothing")
	}
	if _, err := ResponseEnsemble(context.Background(), "e", []OpenMember{open("one", one)}, task); err == nil {
		t.Error("an ensemble of one member was accepted")
	}
}
