package finetune

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/shared"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/tokenizers"
)

func tinyBERT(t *testing.T) (*models.Model, *tokenizers.Tokenizer) {
	t.Helper()
	dir := shared.MustPath(t, "fixtures", "tiny-bert")
	m, err := models.Load(dir, models.LoadOptions{Heads: &models.Heads{}, Device: gotch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizers.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m, tok
}

// toyActs is a multi-label task a classifier must learn: label 0 when the text says "hotel", label 1 when
// it says "cheap"; both, one or none.
func toyActs(n int) []Example {
	fillers := []string{"please", "i want", "can you find", "is there", "tell me about", "we need"}
	var out []Example
	for i := 0; i < n; i++ {
		f := fillers[i%len(fillers)]
		switch i % 4 {
		case 0:
			out = append(out, Example{Text: f + " a hotel", Labels: []int{0}})
		case 1:
			out = append(out, Example{Text: f + " something cheap", Labels: []int{1}})
		case 2:
			out = append(out, Example{Text: f + " a cheap hotel", Labels: []int{0, 1}})
		default:
			out = append(out, Example{Text: f + " the music", Labels: nil})
		}
	}
	return out
}

func TestMultiLabelLearnsAndKeepsTheBestEpoch(t *testing.T) {
	m, tok := tinyBERT(t)
	train, val := toyActs(48), toyActs(24)
	cfg := Config{Classes: 2, MultiLabel: true, Epochs: 15, BatchSize: 8, LR: 3e-3, Seed: 1, Patience: 5}
	c, run, err := Train(context.Background(), m, tok, train, val, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Evaluate(val)
	if err != nil {
		t.Fatal(err)
	}
	if got.MicroF1 < 0.9 {
		t.Errorf("validation micro F1 %.3f after fine-tuning (run %+v), want ≥ 0.9", got.MicroF1, run)
	}
	// The weights kept are the best epoch's: scoring again gives its recorded score.
	bestAt := -1
	for i, st := range run.ValSteps {
		if st == run.BestStep {
			bestAt = i
		}
	}
	if math.Abs(got.MicroF1-run.BestScore) > 1e-9 || bestAt < 0 || run.ValScores[bestAt] != run.BestScore {
		t.Errorf("kept weights score %v, best step %d scored %v (validated at %v)", got.MicroF1, run.BestStep, run.BestScore, run.ValSteps)
	}
	for _, s := range run.ValScores {
		if s > run.BestScore {
			t.Errorf("epoch score %v above the best %v", s, run.BestScore)
		}
	}
}

func TestSameSeedSameRun(t *testing.T) {
	// Bit-for-bit on CPU holds for a fixed thread count: libtorch splits reductions by thread, and its OpenMP
	// thread count is set per OS thread, so the test stays on one OS thread with one intra-op thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev := torch.NumThreads()
	if err := torch.SetNumThreads(1); err != nil {
		t.Fatal(err)
	}
	defer torch.SetNumThreads(prev)
	train, val := toyActs(24), toyActs(8)
	cfg := Config{Classes: 2, MultiLabel: true, Epochs: 3, BatchSize: 8, LR: 1e-3, Seed: 7}
	var runs []string
	for i := 0; i < 2; i++ {
		m, tok := tinyBERT(t)
		c, run, err := Train(context.Background(), m, tok, train, val, cfg)
		if err != nil {
			t.Fatal(err)
		}
		probs, err := c.Scores([]string{"a hotel", "cheap"})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, fmt.Sprint(run.ValScores, probs))
	}
	if runs[0] != runs[1] {
		t.Errorf("same seed, different runs:\n%s\n%s", runs[0], runs[1])
	}
}

func TestProbeLeavesTheEncoderAlone(t *testing.T) {
	m, tok := tinyBERT(t)
	before := map[string]float64{}
	for name, p := range m.Params() {
		before[name] = p.MustSum(gotch.Double, false).Float64Values()[0]
	}
	// Single-label: "hotel" texts are class 0, "cheap" ones class 1.
	var train []Example
	for _, e := range toyActs(40) {
		if len(e.Labels) == 1 {
			train = append(train, Example{Text: e.Text, Labels: e.Labels})
		}
	}
	c, _, err := Train(context.Background(), m, tok, train, train, Config{Classes: 2, Frozen: true, Epochs: 30, BatchSize: 8, LR: 1e-2, Seed: 3, Patience: -1})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range m.Params() {
		if after := p.MustSum(gotch.Double, false).Float64Values()[0]; after != before[name] {
			t.Errorf("probe changed encoder tensor %s", name)
		}
	}
	got, err := c.Evaluate(train)
	if err != nil {
		t.Fatal(err)
	}
	if got.Accuracy < 0.9 {
		t.Errorf("probe accuracy %.3f on its training set, want ≥ 0.9", got.Accuracy)
	}
}

func TestRefusesBadExamples(t *testing.T) {
	m, tok := tinyBERT(t)
	cases := []struct {
		name  string
		train []Example
		cfg   Config
	}{
		{"label out of range", []Example{{Text: "a", Labels: []int{2}}}, Config{Classes: 2, MultiLabel: true}},
		{"single-label example with two labels", []Example{{Text: "a", Labels: []int{0, 1}}}, Config{Classes: 2}},
		{"empty text", []Example{{Text: " ", Labels: []int{0}}}, Config{Classes: 2}},
		{"no examples", nil, Config{Classes: 2}},
		{"one class", []Example{{Text: "a", Labels: []int{0}}}, Config{Classes: 1}},
	}
	for _, c := range cases {
		if _, _, err := Train(context.Background(), m, tok, c.train, nil, c.cfg); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

func TestDualEncoderLossFalls(t *testing.T) {
	m, tok := tinyBERT(t)
	topics := []string{"hotel", "train", "music", "cheap", "book", "play", "taxi", "restaurant"}
	var pairs []Pair
	for i := 0; i < 64; i++ {
		w := topics[i%len(topics)]
		pairs = append(pairs, Pair{Query: "i am looking for a " + w, Response: "here is the " + w + " you wanted"})
	}
	run, err := TrainDual(context.Background(), m, tok, pairs, DualConfig{Epochs: 8, BatchSize: 8, LR: 3e-3, Temperature: 0.1, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	losses := run.EpochLosses
	if len(losses) != 8 || !(losses[7] < 0.7*losses[0]) {
		t.Errorf("epoch losses %v: want the last below 70%% of the first", losses)
	}
	if _, err := TrainDual(context.Background(), m, tok, pairs[:1], DualConfig{}); err == nil {
		t.Error("one pair accepted")
	}
}

// A dual encoder validates every EvalEvery steps on the held-out pairs and keeps the weights with the
// lowest validation loss; patience ends the run.
func TestDualEncoderValidatesBySteps(t *testing.T) {
	topics := []string{"hotel", "train", "music", "cheap", "book", "play", "taxi", "restaurant"}
	var pairs []Pair
	for i := 0; i < 40; i++ {
		w := topics[i%len(topics)]
		pairs = append(pairs, Pair{Query: "i am looking for a " + w, Response: "here is the " + w + " you wanted"})
	}
	train, val := HoldOut(pairs)
	if len(val) != 4 || len(train) != 36 {
		t.Fatalf("held out %d of %d", len(val), len(pairs))
	}
	if again, _ := HoldOut(pairs); fmt.Sprint(again) != fmt.Sprint(train) {
		t.Error("the held-out split changes between calls")
	}
	m, tok := tinyBERT(t)
	cfg := DualConfig{Epochs: 2, BatchSize: 4, LR: 3e-3, Temperature: 0.1, Seed: 2, Val: val, EvalEvery: 3, Patience: -1, Pooling: models.CLS}
	run, err := TrainDual(context.Background(), m, tok, train, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 36 pairs in batches of 4: 9 steps an epoch, 18 in all; validations after steps 3, 6, …, 18.
	if run.Steps != 18 || fmt.Sprint(run.ValSteps) != "[3 6 9 12 15 18]" {
		t.Errorf("%d steps, validated after %v", run.Steps, run.ValSteps)
	}
	best, at := math.Inf(1), -1
	for i, v := range run.ValLosses {
		if v < best {
			best, at = v, run.ValSteps[i]
		}
	}
	if at != run.BestStep {
		t.Errorf("best step %d, but the lowest validation loss came after step %d (%v)", run.BestStep, at, run.ValLosses)
	}
	// The kept weights give the best recorded validation loss again.
	got, err := dualLoss(m, tok, val, DualConfig{BatchSize: 4, Temperature: 0.1, MaxLength: 64, Pooling: models.CLS})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-best) > 1e-5 {
		t.Errorf("kept weights: validation loss %v, best recorded %v (losses %v, best step %d)", got, best, run.ValLosses, run.BestStep)
	}
}

// The options of a run reach the model: the batch size and the validation interval set the steps and
// where validations fall, patience ends the run, and a classifier's pooling, max length and dropout are
// the ones it was given.
func TestOptionsReachTheRun(t *testing.T) {
	train, val := toyActs(20), toyActs(8)
	for _, c := range []struct {
		name     string
		cfg      Config
		steps    int
		valSteps string
	}{
		// 20 examples in batches of 8: 3 steps an epoch (the last batch holds 4).
		{"per epoch", Config{Epochs: 2, BatchSize: 8, Patience: -1}, 6, "[3 6]"},
		{"every 2 steps", Config{Epochs: 2, BatchSize: 8, EvalEvery: 2, Patience: -1}, 6, "[2 4 6]"},
		{"batch 5, every 4 steps", Config{Epochs: 3, BatchSize: 5, EvalEvery: 4, Patience: -1}, 12, "[4 8 12]"},
		// LR 0 is the default 5e-5, too small to move a micro F1 on toy data in a few steps: the first
		// validation stays the best, and the run ends at the second validation past it (patience 1).
		{"patience", Config{Epochs: 10, BatchSize: 10, EvalEvery: 1, Patience: 1, LR: 1e-12}, 3, "[1 2 3]"},
	} {
		m, tok := tinyBERT(t)
		cfg := c.cfg
		cfg.Classes, cfg.MultiLabel, cfg.Seed = 2, true, 1
		_, run, err := Train(context.Background(), m, tok, train, val, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if run.Steps != c.steps || fmt.Sprint(run.ValSteps) != c.valSteps {
			t.Errorf("%s: %d steps, validated after %v; want %d, %s", c.name, run.Steps, run.ValSteps, c.steps, c.valSteps)
		}
	}
}

func TestClassifierPoolsTruncatesAndDropsOut(t *testing.T) {
	m, tok := tinyBERT(t)
	texts := []string{"a cheap hotel in the north please", "hotel"}
	for _, pool := range []models.Pooling{models.CLS, models.Mean} {
		cfg, err := Config{Classes: 2, Pooling: pool, MaxLength: 4, Truncation: tokenizers.TruncateLeft}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		c, err := newClassifier(m, tok, cfg)
		if err != nil {
			t.Fatal(err)
		}
		in, err := c.encode(texts)
		if err != nil {
			t.Fatal(err)
		}
		if got := in.IDs.MustSize(); got[1] != 4 {
			t.Errorf("max length 4: inputs of %v", got)
		}
		// Left truncation keeps [CLS], the text's last two tokens and [SEP].
		full, err := tok.Encode(texts[0])
		if err != nil {
			t.Fatal(err)
		}
		n := len(full)
		if got, want := fmt.Sprint(in.IDs.Int64Values()[:4]), fmt.Sprint([]int64{full[0], full[n-3], full[n-2], full[n-1]}); got != want {
			t.Errorf("left truncation to 4 kept %s, want %s (of %v)", got, want, full)
		}
		out, err := m.Forward(in, false)
		if err != nil {
			t.Fatal(err)
		}
		direct, err := models.Pool(pool, out.Last, in.Mask)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.features(texts, false)
		if err != nil {
			t.Fatal(err)
		}
		if d := got.MustSub(direct, false).MustAbs(true).MustMax(true).Float64Values()[0]; d > 1e-6 {
			t.Errorf("%s pooling: features differ from models.Pool(%s) by %g", pool, pool, d)
		}
		in.Drop()
		out.Drop()
	}
	// Dropout at the classification layer acts in training only, with the probability given.
	x := ts.MustOnes([]int64{64, m.Config.HiddenSize}, gotch.Float, gotch.CPU)
	for _, p := range []float64{0, 0.5} {
		cfg, err := Config{Classes: 2, Dropout: p}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		c, err := newClassifier(m, tok, cfg)
		if err != nil {
			t.Fatal(err)
		}
		same := c.trainLogits(x).MustSub(c.logits(x), true).MustAbs(true).MustMax(true).Float64Values()[0] < 1e-7
		if same != (p == 0) {
			t.Errorf("dropout %g: training logits equal the evaluation ones: %v", p, same)
		}
	}
	if _, err := (Config{Classes: 2, Dropout: 1}).withDefaults(); err == nil {
		t.Error("dropout 1 accepted")
	}
}
