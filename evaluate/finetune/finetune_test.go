package finetune

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/sugarme/gotch"

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
	if math.Abs(got.MicroF1-run.BestScore) > 1e-9 || run.ValScores[run.BestEpoch-1] != run.BestScore {
		t.Errorf("kept weights score %v, best epoch %d scored %v", got.MicroF1, run.BestEpoch, run.BestScore)
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
	losses, err := TrainDual(context.Background(), m, tok, pairs, DualConfig{Epochs: 8, BatchSize: 8, LR: 3e-3, Temperature: 0.1, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(losses) != 8 || !(losses[7] < 0.7*losses[0]) {
		t.Errorf("epoch losses %v: want the last below 70%% of the first", losses)
	}
	if _, err := TrainDual(context.Background(), m, tok, pairs[:1], DualConfig{}); err == nil {
		t.Error("one pair accepted")
	}
}
