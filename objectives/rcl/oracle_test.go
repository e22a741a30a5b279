package rcl

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/shared"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives/internal/testutil"
	"convrep/safetensors"
)

// The oracle: testdata/oracle/batches.* were computed by TOD-BERT's released code (jasonwu0731/ToD-BERT
// 0c36e31, my_tod_pretraining.py: [SYS] and [USR] added and the embeddings resized as main and train() do,
// mask_for_response_selection, mask_tokens, and train()'s loss lines) on transformers v4.29.2 and Debian's
// torch 1.13.1, with scripts/oracle/oracle.py (its docstring says how to run it), from
// ../shared/fixtures/tiny-bert with dropout 0: three batches of dialogues cut into contexts and responses,
// the contexts masked, and the RCL and MLM losses of each.
type oracleBatches struct {
	VocabSize int64 `json:"vocab_size"` // with [SYS] and [USR]
	Batches   []struct {
		MLM  float64 `json:"mlm"`
		RCL  float64 `json:"rcl"`
		Loss float64 `json:"loss"`
	} `json:"batches"`
}

// TestOracleRCLLoss: on the oracle's batches, the rcl objective's loss and its rcl and mlm terms are TOD-BERT's
// within 1e-5.
func TestOracleRCLLoss(t *testing.T) {
	dir := filepath.Join("testdata", "oracle")
	b, err := os.ReadFile(filepath.Join(dir, "batches.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run oracleBatches
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(filepath.Join(dir, "batches.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	m, err := models.Load(shared.MustPath(t, "fixtures", "tiny-bert"), models.LoadOptions{
		Heads: &models.Heads{MLM: true}, VocabSize: run.VocabSize, Dropout: &zero, Device: gotch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	// The rows of the two added tokens, the last two of the vocabulary, as the authors' resize_token_embeddings
	// drew them.
	for _, c := range []struct{ param, fixture string }{
		{"bert.embeddings.word_embeddings.weight", "added_rows"},
		{"cls.predictions.bias", "added_bias"},
	} {
		p, ok := m.Params()[c.param]
		if !ok {
			t.Fatalf("the model has no %s", c.param)
		}
		v := testutil.Values(t, f, c.fixture)
		src := ts.MustOfSlice(v).MustTotype(p.DType(), true)
		err := torch.NoGrad(func() error {
			rows := p.MustNarrow(0, run.VocabSize-2, 2, false)
			rows.Copy_(src.MustView(rows.MustSize(), false))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	o, err := testutil.New(Name, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, want := range run.Batches {
		prefix := "batch" + string(rune('0'+i)) + "."
		ctx := ids(t, f, prefix+"context")
		labels := ids(t, f, prefix+"labels")
		resp := ids(t, f, prefix+"response")
		batch := Batch{Context: input(ctx), Labels: testutil.Labels(t, labels), Response: input(resp)}
		loss, metrics, err := o.Loss(batch, true)
		if err != nil {
			t.Fatal(err)
		}
		got := testutil.Metrics(t, metrics)
		got["loss"] = loss.Float64Values(true)[0]
		for name, w := range map[string]float64{"rcl": want.RCL, "mlm": want.MLM, "loss": want.Loss} {
			worst = max(worst, math.Abs(got[name]-w))
			if math.Abs(got[name]-w) > 1e-5 {
				t.Errorf("batch %d: %s %.8f, TOD-BERT's %.8f", i, name, got[name], w)
			}
		}
	}
	t.Logf("%d batches: rcl, mlm and their sum within %.2g of TOD-BERT's", len(run.Batches), worst)
}

// ids reads an int64 [rows, width] fixture tensor as rows; -100 stays -100 (inputs.IgnoreLabel).
func ids(t *testing.T, f *safetensors.File, name string) [][]int64 {
	t.Helper()
	tn, ok := f.Lookup(name)
	if !ok || len(tn.Shape) != 2 {
		t.Fatalf("fixture %s: missing or not a matrix", name)
	}
	v, err := tn.Int64s()
	if err != nil {
		t.Fatal(err)
	}
	w := int(tn.Shape[1])
	var out [][]int64
	for r := 0; r < len(v)/w; r++ {
		out = append(out, v[r*w:(r+1)*w])
	}
	return out
}

// input is the authors' encoder input: the ids and attention_mask = ids > 0.
func input(rows [][]int64) models.Input {
	var flat, mask []int64
	for _, r := range rows {
		for _, x := range r {
			flat = append(flat, x)
			mask = append(mask, map[bool]int64{true: 1}[x > 0])
		}
	}
	shape := []int64{int64(len(rows)), int64(len(rows[0]))}
	return models.Input{IDs: ts.MustOfSlice(flat).MustView(shape, true), Mask: ts.MustOfSlice(mask).MustView(shape, true)}
}
