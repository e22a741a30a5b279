package trainer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convrep/objectives/mlm"
	"convrep/rundir"
	"convrep/trainer/trainertest"
)

// baselines are the baseline objectives (MLM, TOD-BERT's RCL, SimCSE) trained on the tiny experiment by the tests below, with the
// overrides each needs.
var baselines = []struct {
	name string
	set  []string
}{
	// max_length 16 cuts a dialogue into about 8 windows (long_dialogues = "windows"): 7 dialogues make
	// 4 batches an epoch, as 64 do for the others.
	{"mlm", []string{"objective.name=mlm", "objective.mask_prob=0.15", "data.max_examples=7"}},
	{"rcl", []string{"objective.name=rcl", "objective.mlm_weight=1.0"}},
	{"simcse", []string{"objective.name=simcse", "data.pairs=dropout", "objective.temperature=0.05"}},
}

// Each objective, chosen by name in TOML, trains on the shared corpora over several epochs with a falling
// loss, and a run resumed from a checkpoint of a later epoch ends bit-identical to the uninterrupted run:
// the masks and splits of each epoch come from (seed, epoch, example), not from saved random state.
func TestBaselinesTrainAndResumeExactly(t *testing.T) {
	for _, o := range baselines {
		t.Run(o.name, func(t *testing.T) {
			dir := t.TempDir()
			exp := trainertest.Experiment(t, dir, "")
			full := filepath.Join(dir, "out")
			set := append([]string{"data.max_examples=64", "train.max_steps=24", "train.epochs=10",
				"train.checkpoint_every=10", "train.keep_checkpoints=10"}, o.set...) // the objective's own last
			if err := trainertest.Run(t, exp, set, false); err != nil {
				t.Fatal(err)
			}
			ref := readMetricLines(t, full)
			checkSteps(t, "the full run", ref, 24)
			if e := ref[len(ref)-1].Epoch; e < 5 {
				t.Fatalf("the run ends in epoch %d, want several epochs of 4 batches", e)
			}
			first := (ref[0].Loss + ref[1].Loss + ref[2].Loss) / 3
			last := (ref[21].Loss + ref[22].Loss + ref[23].Loss) / 3
			t.Logf("%s: loss %.4f (steps 1-3) → %.4f (steps 22-24)", o.name, first, last)
			if !(last < first) {
				t.Errorf("loss did not fall: %.4f → %.4f", first, last)
			}

			out := filepath.Join(t.TempDir(), "out")
			if err := os.MkdirAll(rundir.At(out).CheckpointDir(), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(rundir.At(full).CheckpointPath(10)) // step 10: epoch 2, mid-epoch
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(rundir.At(out).CheckpointPath(10), b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := trainertest.Run(t, exp, append(set, fmt.Sprintf("output_dir=%q", out)), true); err != nil {
				t.Fatal(err)
			}
			trainertest.SameFiles(t, filepath.Join(full, "model", "model.safetensors"), filepath.Join(out, "model", "model.safetensors"))
			trainertest.SameFiles(t, rundir.At(full).CheckpointPath(20), rundir.At(out).CheckpointPath(20))
			ms := readMetricLines(t, out)
			if len(ms) != 14 {
				t.Fatalf("resumed run logged %d steps, want 14", len(ms))
			}
			for i, m := range ms {
				if !sameTrajectory(m, ref[10+i]) {
					t.Errorf("step %d differs from the full run:\n%+v\n%+v", m.Step, m, ref[10+i])
				}
			}
		})
	}
}

// The masked-LM objectives get their role tokens and MLM head: the saved tokenizer knows [USR] and [SYS],
// and the saved model has the MLM head over the grown vocabulary.
func TestMLMRunSavesRoleTokensAndHead(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Experiment(t, dir, "")
	if err := trainertest.Run(t, exp, []string{"objective.name=mlm", "data.max_examples=32", "train.max_steps=2"}, false); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "out", "model")
	for _, want := range []string{"[USR]", "[SYS]"} {
		found := false
		for _, f := range []string{"added_tokens.json", "special_tokens_map.json", "tokenizer_config.json"} {
			if b, err := os.ReadFile(filepath.Join(model, f)); err == nil && strings.Contains(string(b), `"`+want+`"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("the saved tokenizer does not list %s", want)
		}
	}
	tr, err := trainertest.New(t, exp, []string{"objective.name=mlm", "data.max_examples=32", "train.max_steps=2",
		fmt.Sprintf("output_dir=%q", filepath.Join(dir, "again"))}, false)
	if err != nil {
		t.Fatal(err)
	}
	m := tr.Backbone().Model
	if !m.Heads.MLM {
		t.Error("the mlm objective's model has no MLM head")
	}
	if got, want := m.Config.VocabSize, int64(tr.Backbone().Tok.VocabSize()); got != want || want != 30522+2 {
		t.Errorf("model vocabulary %d, tokenizer %d, want 30524", got, want)
	}
	if _, err := m.VS.Root().Get("cls.predictions.bias"); err != nil {
		t.Errorf("no MLM bias: %v", err)
	}
	if tr.Objective().Name() != mlm.Name {
		t.Errorf("objective %q", tr.Objective().Name())
	}
}
