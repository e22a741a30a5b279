package objectives_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/experiment"
	"convrep/models"
	"convrep/objectives"
	"convrep/tokenizers"
	"convrep/trainer/trainertest"
)

// docs/objectives.md: Adding an objective (the page shows this code, from here to the end mark, verbatim).

// Toy: consecutive turns of a dialogue should embed alike. Each example is a turn and the next one; the
// loss is 1 − cos between their mean-pooled embeddings. Everything a run needs of an objective is here.
func init() { objectives.Register("toy", objectives.Paper{}, parseToy) }

// toyConfig is the toy's settings: it has none, so any key of [objective] besides name is an error.
type toyConfig struct{}

func parseToy(s objectives.Settings) (objectives.Config, error) {
	for key := range s {
		return nil, fmt.Errorf("unknown setting %s", key)
	}
	return toyConfig{}, nil
}

// Needs: no head, no special token.
func (toyConfig) Needs() objectives.Requirements { return objectives.Requirements{} }

func (toyConfig) Build(m *models.Model) (objectives.Objective, error) { return &toy{model: m}, nil }

type toy struct{ model *models.Model }

func (o *toy) Name() string { return "toy" }

// Groups: the encoder at train.lr; the toy adds no parameter of its own.
func (o *toy) Groups() []objectives.Group {
	return []objectives.Group{objectives.EncoderGroup(o.model)}
}

// Dataset pairs every turn with the next.
func (o *toy) Dataset(env objectives.DataEnv) (objectives.Dataset, error) {
	dialogues, err := env.ReadDialogues()
	if err != nil {
		return nil, err
	}
	d := &toyData{tok: env.Tok, maxLength: env.MaxLength}
	for _, dl := range dialogues {
		for i := 1; i < len(dl.Turns); i++ {
			d.pairs = append(d.pairs, [2]string{dl.Turns[i-1].Text, dl.Turns[i].Text})
		}
	}
	return d, nil
}

type toyData struct {
	pairs     [][2]string
	tok       *tokenizers.Tokenizer
	maxLength int
}

// toyBatch is what the toy's Loss receives: row i of First and of Next are one pair.
type toyBatch struct{ First, Next models.Input }

func (d *toyData) Len() int { return len(d.pairs) }

func (d *toyData) Batch(idx []int, dev gotch.Device) (objectives.Batch, error) {
	side := func(k int) (models.Input, error) {
		texts := make([]string, len(idx))
		for i, j := range idx {
			texts[i] = d.pairs[j][k]
		}
		b, err := d.tok.EncodeBatch(texts, tokenizers.BatchOptions{MaxLength: d.maxLength})
		if err != nil {
			return models.Input{}, err
		}
		return models.BatchInput(b, dev)
	}
	first, err := side(0)
	if err != nil {
		return objectives.Batch{}, err
	}
	next, err := side(1)
	if err != nil {
		first.Drop()
		return objectives.Batch{}, err
	}
	return objectives.Batch{Value: toyBatch{first, next}, Drop: func() { first.Drop(); next.Drop() }}, nil
}

// Loss is 1 − mean cos(e(turn), e(next turn)). libtorch errors panic in Must calls; the trainer catches them.
func (o *toy) Loss(batch any, train bool) (*ts.Tensor, map[string]*ts.Tensor, error) {
	b, ok := batch.(toyBatch)
	if !ok {
		return nil, nil, fmt.Errorf("toy loss: batch is %T", batch)
	}
	embed := func(in models.Input) (*ts.Tensor, error) {
		out, err := o.model.Forward(in, train)
		if err != nil {
			return nil, err
		}
		defer out.Drop()
		return models.Pool(models.Mean, out.Last, in.Mask)
	}
	a, err := embed(b.First)
	if err != nil {
		return nil, nil, err
	}
	defer a.MustDrop()
	c, err := embed(b.Next)
	if err != nil {
		return nil, nil, err
	}
	defer c.MustDrop()
	cos := ts.MustCosineSimilarity(a, c, 1, 1e-8)
	loss := cos.MustMean(gotch.Float, true).MustNeg(true).MustAddScalar(ts.FloatScalar(1), true)
	return loss, nil, nil
}

// docs/objectives.md: end.

// The toy objective above, in one file and unknown to the trainer, trains three steps end to end from an
// experiment file that names it; docs/objectives.md's "Adding an objective" shows its code verbatim.
func TestToyObjectiveTrainsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Tiny{
		Name:      "toy",
		Seed:      1,
		Objective: `name = "toy"`,
		Train:     "batch_size = 8\nmax_steps = 3\nlr = 1e-3\nthreads = 1\nlog_every = 1",
	}.Write(t, dir)
	if err := trainertest.Run(t, exp, nil, false); err != nil {
		t.Fatal(err)
	}
	metrics, err := os.ReadFile(filepath.Join(dir, "out", "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(metrics), "\n"); n != 3 {
		t.Errorf("%d metrics lines, want one per step of 3", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "model", "model.safetensors")); err != nil {
		t.Errorf("no trained model: %v", err)
	}
	if _, err := experiment.Load(exp, []string{"objective.margin=1"}); err == nil || !strings.Contains(err.Error(), "unknown setting margin") {
		t.Errorf("an unknown toy setting: %v", err)
	}

	// docs/objectives.md shows the objective's code as it is here.
	src, err := os.ReadFile("toy_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, _ := strings.Cut(string(src), "// docs/objectives.md: Adding an objective (the page shows this code, from here to the end mark, verbatim).\n\n")
	code, _, _ = strings.Cut(code, "\n// docs/objectives.md: end.")
	page, err := os.ReadFile(filepath.Join("..", "docs", "objectives.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "```go\n"+code+"```") {
		t.Error("docs/objectives.md's \"Adding an objective\" does not show objectives/toy_test.go's toy objective as it is")
	}
}
