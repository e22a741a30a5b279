package mgt_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"convrep/objectives"
	"convrep/objectives/internal/testutil"
	"convrep/objectives/mgt"
	"convrep/trainer/trainertest"

	"github.com/sugarme/gotch"

	"convrep/checkpoint"
	"convrep/models"
	"convrep/rundir"
)

// mgtExperiment writes a tiny MGT experiment (woz2, a 2-layer BERT of width 32, the previous turn as context,
// k = 4 candidates, member 3 of L = 3 segments) of the given steps with its output under dir/out and its
// caches under cache, and returns the file's path.
func mgtExperiment(t *testing.T, dir, cache string, steps int) string {
	t.Helper()
	return trainertest.Tiny{
		Name:      "tiny_mgt",
		MaxLength: 24,
		Dropout:   0.1,
		Data:      fmt.Sprintf("max_examples = 320\ncache_dir = %q", cache),
		Objective: `name = "mgt"
variant = "mgt"
segment = 3
models = 3
candidates = 4
max_context_turns = 1
bucket_sample = 60`,
		Train: fmt.Sprintf(`batch_size = 8
epochs = 2
max_steps = %d
lr = 3e-3
head_lr = 3e-3
checkpoint_every = 3
log_every = 1
threads = 1`, steps),
	}.Write(t, dir)
}

// TestMGTTrainsWithFallingLoss trains the tiny MGT experiment for 60 steps and wants the mean loss of the last
// fifteen steps below that of the first fifteen by a margin, and the response encoder in the checkpoint.
func TestMGTTrainsWithFallingLoss(t *testing.T) {
	dir := t.TempDir()
	exp := mgtExperiment(t, dir, filepath.Join(dir, "cache"), 60)
	if err := trainertest.Run(t, exp, nil, false); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	ms := trainertest.Lines(t, out)
	if len(ms) != 60 {
		t.Fatalf("%d metric lines, want 60", len(ms))
	}
	first, last := 0.0, 0.0
	for i := 0; i < 15; i++ {
		first += ms[i].Loss / 15
		last += ms[45+i].Loss / 15
	}
	t.Logf("mean loss of steps 1-15 %.4f, of steps 46-60 %.4f (ln 4 = 1.386)", first, last)
	if !(last < first-0.03) {
		t.Fatalf("loss did not fall: first fifteen steps %.4f, last fifteen %.4f", first, last)
	}
	c, err := checkpoint.Read(rundir.At(out).CheckpointPath(60))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Params[mgt.ResponsePrefix+".bert.encoder.layer.1.output.dense.weight"]; !ok {
		t.Fatal("the checkpoint holds no response encoder")
	}
	// Eq. 7's members are read back from a run: both encoders, trained apart from one starting point.
	de, err := mgt.LoadDualEncoder(out, models.Mean, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	name := "bert.encoder.layer.0.attention.self.query.weight"
	diff := de.Context.Params()[name].MustSub(de.Response.Params()[name], false).MustAbs(true).MustMax(true).Float64Values(true)[0]
	if diff == 0 {
		t.Fatal("the loaded context and response encoders are the same: the response encoder was not read from the checkpoint")
	}
}

// TestMGTKillAndResumeIsBitIdentical trains the tiny MGT experiment uninterrupted (A) and SIGKILLed at a random
// moment and resumed (B); the final checkpoints and models must be the same bytes. Each has its own cache:
// B's first start embeds the pool and draws the segments, its resume reads them back, so a cache miss and a
// cache hit must give the same run.
func TestMGTKillAndResumeIsBitIdentical(t *testing.T) {
	trainertest.KillAndResume(t, 30, func(dir string) string {
		return mgtExperiment(t, dir, filepath.Join(dir, "cache"), 30)
	})
}

// MGT's response encoder is an encoder: it trains at train.lr, the rate the experiment file names for
// encoders, whatever train.head_lr says (it was once in the head's group, at head_lr).
func TestMGTResponseEncoderTrainsAtLR(t *testing.T) {
	o, err := testutil.New("mgt", testutil.TinyBERT(t, 3), objectives.Settings{"variant": "mgt", "segment": int64(3), "models": int64(3)})
	if err != nil {
		t.Fatal(err)
	}
	resp, enc := 0, 0
	for _, g := range o.Groups() {
		for _, name := range g.Params {
			if g.Rate != objectives.EncoderRate {
				t.Errorf("%s trains at %q, want train.lr (%q)", name, g.Rate, objectives.EncoderRate)
			}
			if strings.HasPrefix(name, mgt.ResponsePrefix+".") {
				resp++
			} else {
				enc++
			}
		}
	}
	if resp == 0 || resp != enc {
		t.Errorf("%d response-encoder and %d context-encoder tensors: want two encoders of one size", resp, enc)
	}
}
