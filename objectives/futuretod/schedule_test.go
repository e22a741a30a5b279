package futuretod

import (
	"math"

	"fmt"
	"path/filepath"
	"testing"

	"github.com/BurntSushi/toml"

	"convrep/objectives"
	"convrep/objectives/mlm"
)

// The paper's file runs FutureTOD as §3.1 and Algorithm 1 do: the teacher takes the student's weights after
// every epoch m with m % E = 0 (E = 10), never inside an epoch, and the run's length is set by early stopping
// on held-out perplexity. Of the refreshes of an M-epoch run only those before epoch M shape training: 20
// epochs make one, not two.
func TestFutureTODPaperSchedule(t *testing.T) {
	path := filepath.Join("..", "..", "experiments", "futuretod_bert_base.toml")
	var file struct {
		Objective map[string]any `toml:"objective"`
		Train     struct {
			ValidShare float64 `toml:"valid_share"`
			EvalEvery  int64   `toml:"eval_every"`
			Patience   int64   `toml:"early_stopping_patience"`
		} `toml:"train"`
	}
	if _, err := toml.DecodeFile(path, &file); err != nil {
		t.Fatal(err)
	}
	s := objectives.Settings{}
	for k, v := range file.Objective {
		if k != "name" {
			s[k] = v
		}
	}
	opt, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	if opt.RefreshEvery != 10 || opt.RefreshUnit != RefreshEpochs {
		t.Fatalf("%s refreshes every %d %s, §3.1 every 10 epochs", path, opt.RefreshEvery, opt.RefreshUnit)
	}
	if tr := file.Train; !(tr.ValidShare > 0) || tr.EvalEvery < 1 || tr.Patience < 1 {
		t.Fatalf("%s: valid_share %v, eval_every %d, early_stopping_patience %d: §3.1 stops early on held-out perplexity",
			path, tr.ValidShare, tr.EvalEvery, tr.Patience)
	}
	f := &futureTOD{opt: opt}
	const perEpoch = 7
	for _, m := range []int{20, 25, 100} {
		var all, shaping []int
		step := int64(0)
		for epoch := 1; epoch <= m; epoch++ { // Algorithm 1, line 3: m in [1, M]
			for b := 1; b <= perEpoch; b++ {
				step++
				if !f.refreshDue(objectives.Progress{Step: step, Epoch: epoch - 1, EndOfEpoch: b == perEpoch}) {
					continue
				}
				if b != perEpoch {
					t.Fatalf("a refresh inside epoch %d", epoch)
				}
				all = append(all, epoch)
				if epoch < m {
					shaping = append(shaping, epoch)
				}
			}
		}
		var want, wantShaping []int
		for epoch := 1; epoch <= m; epoch++ {
			if epoch%10 == 0 { // line 9
				want = append(want, epoch)
				if epoch < m {
					wantShaping = append(wantShaping, epoch)
				}
			}
		}
		if fmt.Sprint(all) != fmt.Sprint(want) || fmt.Sprint(shaping) != fmt.Sprint(wantShaping) {
			t.Errorf("%d epochs: refreshes after epochs %v (%v before the last), want %v (%v)", m, all, shaping, want, wantShaping)
		}
		if m == 20 && len(shaping) != 1 {
			t.Errorf("20 epochs: %d refreshes shape training, want 1", len(shaping))
		}
	}
}

// ValidationLoss is the masked tokens' summed NLL of the student in eval mode and their number: N times the
// mean that mlm.LossFromHidden gives on the student's dropout-free output, with no graph and no teacher in it.
func TestFutureTODValidationLoss(t *testing.T) {
	m := tinyStudent(t, 6)
	f := buildFutureTOD(t, m, objectives.Settings{"top_k_layers": int64(2)})
	b := futureBatch()
	sum, n, err := f.ValidationLoss(b)
	if err != nil {
		t.Fatal(err)
	}
	defer sum.MustDrop()
	if n != b.Labels.N || n == 0 {
		t.Fatalf("count %d, the batch masks %d tokens", n, b.Labels.N)
	}
	if sum.MustRequiresGrad() {
		t.Error("the validation sum holds a graph")
	}
	out, err := m.Forward(b.Context, false)
	if err != nil {
		t.Fatal(err)
	}
	mean, err := mlm.LossFromHidden(m, out.Last, b.Labels)
	if err != nil {
		t.Fatal(err)
	}
	got, want := sum.Float64Values()[0], mean.Float64Values()[0]*float64(n)
	if math.Abs(got-want) > 1e-5*want || !(want > 0) {
		t.Fatalf("summed NLL %v, want %d × %v = %v", got, n, mean.Float64Values()[0], want)
	}
	// The teacher plays no part: zero it and measure again.
	for _, p := range f.teacher.state() {
		p.MustZero_()
	}
	again, _, err := f.ValidationLoss(b)
	if err != nil {
		t.Fatal(err)
	}
	if v := again.Float64Values()[0]; v != got {
		t.Fatalf("with the teacher zeroed: %v, before %v", v, got)
	}
}
