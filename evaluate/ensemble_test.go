package evaluate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"convrep/objectives"
	_ "convrep/objectives/all" // MGT's ensemble (Eq. 7)
)

// mgtEq7 is MGT's ensemble (Eq. 7) as its objective defines it, the one evaluate response uses.
var mgtEq7 = Ensemble{Combine: func(scores [][][]float64) ([][]float64, error) { return objectives.EnsembleOf("mgt", scores) }}

// TestResponseEnsembleByPlainLoop: two members score the same candidate lists (read back from --write-splits):
// one shared encoder scored by cosine, and a dual encoder (its own response encoder, Raw: α = cᵀr, MGT Eq. 4-5).
// The plain loop takes each member's scores, its softmax over the query's candidates, the mean of the two
// (MGT Eq. 7), and ranks the truth (ties last); the ensemble's four figures must match for every seed.
func TestResponseEnsembleByPlainLoop(t *testing.T) {
	texts := []string{"q0", "q1", "q2", "q3", "q4", "q5", "r0", "r1", "r2", "r3", "r4", "r5"}
	// Member one sees the first two coordinates sharply, member two the last two; each gets some queries wrong.
	one := map[string][]float32{}
	two := map[string][]float32{}
	twoR := map[string][]float32{} // the dual encoder's response encoder
	for i, x := range texts {
		a := float64(i)
		one[x] = []float32{float32(math.Cos(a)), float32(math.Sin(a)), float32(math.Cos(2 * a))}
		two[x] = []float32{float32(math.Sin(3 * a)), float32(math.Cos(a / 2)), float32(math.Sin(a))}
		twoR[x] = []float32{2 * float32(math.Cos(5*a)), float32(math.Sin(a / 3)), 1.5}
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
	dual := func(context.Context) (*Session, error) {
		return &Session{Model: "two", Enc: &tableEncoder{vecs: two}, ResponseEnc: &tableEncoder{vecs: twoR}, Raw: true}, nil
	}
	res, err := ResponseEnsemble(context.Background(), "ensemble(one, two)", []OpenMember{open("one", one), dual}, task, mgtEq7)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]float64{}
	for _, r := range res.Rows {
		got[r.Metric] = r.Values
	}
	alpha := []func(q, r string) float64{
		func(q, r string) float64 { // member one: cosine
			var d, na, nb float64
			for k := range one[q] {
				x, y := float64(one[q][k]), float64(one[r][k])
				d, na, nb = d+x*y, na+x*x, nb+y*y
			}
			return d / math.Sqrt(na*nb)
		},
		func(q, r string) float64 { // member two: the raw dot product of its two encoders
			var d float64
			for k := range two[q] {
				d += float64(two[q][k]) * float64(twoR[r][k])
			}
			return d
		},
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
			for m, score := range alpha {
				var z float64
				for _, r := range c.Rows {
					z += math.Exp(score(set.Contexts[c.Query][0], set.Responses[r]))
				}
				for _, r := range c.Rows {
					p[m] = append(p[m], math.Exp(score(set.Contexts[c.Query][0], set.Responses[r]))/z)
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
	if _, err := ResponseEnsemble(context.Background(), "e", []OpenMember{open("one", one)}, task, mgtEq7); err == nil {
		t.Error("an ensemble of one member was accepted")
	}
}

// A Raw session (unnormalised embeddings, for dual encoders) would give wrong prototypes: refused.
func TestRawSessionOnlyForResponse(t *testing.T) {
	enc, train, test := intentFixture()
	s := &Session{Model: "raw", Enc: enc, Raw: true}
	if _, err := s.Intent(context.Background(), IntentTask{Dataset: "toy", Train: train, Test: test, Shots: []int{1}, Seeds: []uint64{0}}); err == nil {
		t.Error("intent took a Raw session")
	}
	if _, err := s.OOS(context.Background(), OOSTask{Dataset: "toy", Train: train, Test: test, OOS: Split{{"qx", "oos"}}, Protocol: OOSPaper,
		Shots: []int{1}, Seeds: []uint64{0}}); err == nil {
		t.Error("oos took a Raw session")
	}
}
