package evaluatecmd

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/suite"
	"convrep/internal/shared"
	"convrep/models"
	"convrep/objectives/mgt/mgttest"
	"convrep/tokenizers"
)

// byHand is response suite.Selection with every response a candidate of every query, computed directly from the two
// encoders: α = cᵀr of mean-pooled embeddings (MGT Eq. 4), the truth ranked last among equal scores.
func byHand(t *testing.T, tok *tokenizers.Tokenizer, ctx, resp *models.Model, queries, responses []string) (top1, mrr float64) {
	t.Helper()
	embed := func(m *models.Model, texts []string) [][]float32 {
		e := &models.Embedder{Model: m, Tokenizer: tok, Pooling: models.Mean, MaxLength: 32, Truncation: tokenizers.TruncateRight}
		v, err := e.Embed(texts)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	c, r := embed(ctx, queries), embed(resp, responses)
	n := len(queries)
	for i := range n {
		scores := make([]float64, n)
		for j := range n {
			for k := range c[i] {
				scores[j] += float64(c[i][k]) * float64(r[j][k])
			}
		}
		truth := scores[i]
		rank := 0
		for _, x := range scores {
			if x >= truth {
				rank++
			}
		}
		if rank == 1 {
			top1++
		}
		mrr += 1 / float64(rank)
	}
	return top1 / float64(n), mrr / float64(n)
}

// evaluate select must rank a run's checkpoints by their own validation scores and choose the best: here four
// checkpoints of a run, each a different pair of encoders, whose scores are computed by hand.
func TestSelectChoosesTheBestCheckpointsOnValidation(t *testing.T) {
	tok, err := tokenizers.Load(shared.MustPath(t, "data", "vocab", "bert-base-uncased"))
	if err != nil {
		t.Fatal(err)
	}
	vocab := int64(tok.VocabSize())
	queries := []string{"i need a cheap hotel in the north", "book a table for two at seven", "what time does the train leave",
		"is there free parking", "find me an italian restaurant", "i want to go to cambridge on friday",
		"can you book a taxi for me", "where is the museum", "i need a place to stay with wifi", "any chinese food in the south"}
	responses := []string{"there are two cheap hotels in the north", "your table is booked", "it leaves at 9:15",
		"yes, parking is free", "pizza hut is italian and in the centre", "there are ten trains on friday",
		"a red toyota will pick you up", "it is on king's parade", "the acorn guest house has wifi", "the golden wok is in the south"}
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("text,response\n")
	for i := range queries {
		fmt.Fprintf(&csv, "%q,%q\n", queries[i], responses[i])
	}
	val := write(t, filepath.Join(dir, "val.csv"), csv.String())

	// The run: model/ holds the last context encoder; each checkpoint its own pair of encoders.
	run := filepath.Join(dir, "run")
	want := map[string][2]float64{} // checkpoint -> top-1, MRR by hand
	var last [2]*models.Model
	for i, step := range []int{10, 20, 30, 40} {
		ctx, resp := mgttest.Encoder(t, vocab, uint64(100+2*i)), mgttest.Encoder(t, vocab, uint64(101+2*i))
		path := filepath.Join(run, "checkpoints", fmt.Sprintf("step-%09d.safetensors", step))
		mgttest.WriteCheckpoint(t, path, ctx, resp)
		top1, mrr := byHand(t, tok, ctx, resp, queries, responses)
		want[path] = [2]float64{top1, mrr}
		last = [2]*models.Model{ctx, resp}
	}
	mgttest.Run(t, filepath.Join(dir, "final"), tok, last[0], last[1]) // model/ of a finished run
	if err := os.Rename(filepath.Join(dir, "final", "model"), filepath.Join(run, "model")); err != nil {
		t.Fatal(err)
	}
	t.Logf("by hand (top-1, MRR): %v", want)

	for _, metric := range []struct {
		name  string
		index int
	}{{"top1", 0}, {"mrr", 1}} {
		t.Run(metric.name, func(t *testing.T) {
			out := filepath.Join(dir, metric.name, "chosen.json")
			err := dispatch(context.Background(), []string{"select", "--model", run, "--checkpoints", run, "--val", val,
				"--candidates", strconv.Itoa(len(queries)), "--seeds", "0", "--top", "2", "--metric", metric.name,
				"--max-length", "32", "--batch-size", "4", "--quiet", "--output", out}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var got suite.Selection
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Ranked) != len(want) {
				t.Fatalf("ranked %d checkpoints, want %d", len(got.Ranked), len(want))
			}
			for _, r := range got.Ranked {
				w := want[r.Checkpoint]
				if math.Abs(r.Top1-w[0]) > 1e-9 || math.Abs(r.MRR-w[1]) > 1e-9 {
					t.Errorf("%s: top-1 %.6f, MRR %.6f; by hand %.6f, %.6f", r.Checkpoint, r.Top1, r.MRR, w[0], w[1])
				}
			}
			// The expected order, by hand: the metric, higher first; equal values (to rounding) the earlier step.
			paths := make([]string, 0, len(want))
			for p := range want {
				paths = append(paths, p)
			}
			sort.Slice(paths, func(i, j int) bool {
				a, b := want[paths[i]][metric.index], want[paths[j]][metric.index]
				if math.Abs(a-b) > 1e-9 {
					return a > b
				}
				return paths[i] < paths[j] // zero-padded steps: the earlier step first
			})
			if strings.Join(got.Chosen, ",") != strings.Join(paths[:2], ",") {
				t.Errorf("chose %v, want %v (by hand: %v)", got.Chosen, paths[:2], want)
			}
			txt, err := os.ReadFile(suite.ChosenPath(out))
			if err != nil || string(txt) != strings.Join(paths[:2], ",")+"\n" {
				t.Errorf("%s holds %q (%v), want the chosen paths on one comma-separated line", suite.ChosenPath(out), txt, err)
			}
			if got.Split != "val" || got.Metric != metric.name || got.Top != 2 || got.Queries != len(queries) {
				t.Errorf("selection records split %q, metric %q, top %d, %d queries", got.Split, got.Metric, got.Top, got.Queries)
			}
		})
	}

	// A checkpoint evaluated by evaluate response (--model RUN --checkpoint) gives the score it was ranked with.
	one := filepath.Join(run, "checkpoints", "step-000000010.safetensors")
	out := filepath.Join(dir, "response.json")
	if err := dispatch(context.Background(), []string{"response", "--model", run, "--checkpoint", one, "--test", val,
		"--candidates", strconv.Itoa(len(queries)), "--seeds", "0", "--max-length", "32", "--batch-size", "4", "--quiet", "--output", out}, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	res, err := evaluate.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.Metric == "top1" && math.Abs(r.Mean-want[one][0]) > 1e-9 {
			t.Errorf("evaluate response --model RUN --checkpoint %s: top-1 %v, want %v", one, r.Mean, want[one][0])
		}
	}
}

// Ranking is by the metric, higher first; ties go to the earlier step whatever the input's order.
func TestSelectionOrder(t *testing.T) {
	ck := func(step int64, top1, mrr float64) suite.ScoredCheckpoint {
		return suite.ScoredCheckpoint{Checkpoint: fmt.Sprintf("c/step-%09d.safetensors", step), Step: step, Top1: top1, MRR: mrr}
	}
	cases := []struct {
		name   string
		in     []suite.ScoredCheckpoint
		metric string
		top    int
		want   []int64 // the chosen steps, best first
	}{
		{"by top-1", []suite.ScoredCheckpoint{ck(1, .1, .9), ck(2, .3, .2), ck(3, .2, .5)}, "top1", 2, []int64{2, 3}},
		{"by MRR", []suite.ScoredCheckpoint{ck(1, .1, .9), ck(2, .3, .2), ck(3, .2, .5)}, "mrr", 2, []int64{1, 3}},
		{"a tie goes to the earlier step", []suite.ScoredCheckpoint{ck(30, .5, .1), ck(10, .5, .2), ck(20, .4, .9)}, "top1", 1, []int64{10}},
		{"a tie in top-1 is not broken by MRR", []suite.ScoredCheckpoint{ck(20, .5, .9), ck(10, .5, .1)}, "top1", 2, []int64{10, 20}},
		{"all tied: step order", []suite.ScoredCheckpoint{ck(3, 0, 0), ck(1, 0, 0), ck(2, 0, 0)}, "mrr", 3, []int64{1, 2, 3}},
		{"one checkpoint", []suite.ScoredCheckpoint{ck(7, .2, .3)}, "top1", 1, []int64{7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &suite.Selection{Ranked: append([]suite.ScoredCheckpoint(nil), c.in...), Metric: c.metric, Top: c.top}
			if err := s.Choose(); err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, p := range s.Chosen {
				step, err := suite.CheckpointStep(p)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, step)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("chose steps %v, want %v", got, c.want)
			}
			if s.Checkpoints != strings.Join(s.Chosen, ",") {
				t.Errorf("checkpoints line %q, want %q", s.Checkpoints, strings.Join(s.Chosen, ","))
			}
		})
	}
	for _, top := range []int{0, 2} {
		s := &suite.Selection{Ranked: []suite.ScoredCheckpoint{ck(1, 0, 0)}, Metric: "top1", Top: top}
		if err := s.Choose(); err == nil || !strings.Contains(err.Error(), "want 1 to 1") {
			t.Errorf("--top %d of one checkpoint: %v, want an error", top, err)
		}
	}
}

// Bad command lines of evaluate select (and evaluate response --split) fail with a clear error before any model is
// loaded: the run's model/config.json is garbage, so reaching the model would give a config error instead.
func TestSelectBadInput(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	write(t, filepath.Join(run, "model", "config.json"), "not json")
	a := write(t, filepath.Join(run, "checkpoints", "step-000000010.safetensors"), "x")
	b := write(t, filepath.Join(run, "checkpoints", "step-000000020.safetensors"), "x")
	other := write(t, filepath.Join(dir, "other", "checkpoints", "step-000000010.safetensors"), "x")
	badName := write(t, filepath.Join(run, "checkpoints", "last.safetensors"), "x")
	empty := filepath.Join(dir, "empty")
	if err := os.MkdirAll(filepath.Join(empty, "checkpoints"), 0o755); err != nil {
		t.Fatal(err)
	}
	val := write(t, filepath.Join(dir, "val.csv"), "text,response\nhello,hi\nbye,see you\n")
	out := filepath.Join(dir, "chosen.json")
	sel := func(extra ...string) []string {
		return append([]string{"select", "--model", run, "--dataset", "multiwoz", "--output", out}, extra...)
	}
	checkRefusals(t, []refusal{
		{"no --checkpoints", sel(), "--checkpoints is required"},
		{"a run with no checkpoints", sel("--checkpoints", empty), "no checkpoints"},
		{"top larger than the count", sel("--checkpoints", a+","+b, "--top", "3"), "--top 3: want 1 to 2"},
		{"top zero", sel("--checkpoints", run, "--top", "0"), "--top 0: want 1 to 2"},
		{"choosing on test", sel("--checkpoints", run, "--split", "test"), "validation data only"},
		{"unknown metric", sel("--checkpoints", run, "--metric", "top3"), `--metric "top3"`},
		{"--checkpoint instead of --checkpoints", sel("--checkpoints", run, "--checkpoint", a), "not --checkpoint"},
		{"a test file", sel("--checkpoints", run, "--test", val), "not --test"},
		{"no output", []string{"select", "--model", run, "--dataset", "multiwoz", "--checkpoints", run}, "--output is required"},
		{"output not json", []string{"select", "--model", run, "--dataset", "multiwoz", "--checkpoints", run, "--output", filepath.Join(dir, "x.md")}, "want a .json file"},
		{"a dataset without validation", []string{"select", "--model", run, "--dataset", "ubuntu", "--checkpoints", run, "--output", out}, "only --dataset multiwoz"},
		{"a file not named step-N", sel("--checkpoints", a+","+badName), "not named step-N"},
		{"a checkpoint listed twice", sel("--checkpoints", a+","+b+","+a), "listed twice"},
		{"a checkpoint that does not exist", sel("--checkpoints", a+","+filepath.Join(run, "checkpoints", "step-000000030.safetensors")), "no such file"},
		{"another run's checkpoint", sel("--checkpoints", a+","+other), "not a checkpoint of the run"},
		{"a model list", sel("--checkpoints", run, "--model", run+","+run), "one model"},
		{"response: unknown split", []string{"response", "--model", run, "--dataset", "multiwoz", "--split", "dev"}, `--split "dev"`},
		{"response: val of a dataset without one", []string{"response", "--model", run, "--dataset", "ubuntu", "--split", "val"}, "only --dataset multiwoz has a validation split"},
		{"response: val with a test file", []string{"response", "--model", run, "--test", val, "--split", "val"}, "goes with --dataset multiwoz"},
	})
}
