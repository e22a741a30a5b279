package trainer_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/checkpoint"
	"convrep/datasets"
	"convrep/models"
	"convrep/objectives"
	"convrep/rundir"
	"convrep/trainer"
	"convrep/trainer/trainertest"
)

// validSet are the overrides that turn validation on in the tiny FutureTOD run: 5% of woz2's dialogues held
// out, an evaluation every 2 steps.
var validSet = []string{"train.valid_share=0.05", "train.eval_every=2"}

// futureTOD is FutureTOD (a teacher refreshed each epoch) on a tiny random BERT and 64 woz2 dialogues, eight
// batches of eight per epoch, with dropout on: a run whose objective keeps state of its own beside the weights.
var futureTOD = trainertest.Tiny{
	Name:      "tiny_futuretod",
	Seed:      11,
	MaxLength: 48,
	Dropout:   0.2,
	Data:      "max_examples = 64",
	Objective: "name = \"futuretod\"\ntop_k_layers = 2\nrefresh_every = 1",
	Train:     "batch_size = 8\nepochs = 3\nmax_steps = 12\nlr = 2e-3\ncheckpoint_every = 2\nkeep_checkpoints = 20\nlog_every = 1\nthreads = 1",
}

// TestValidationRun trains FutureTOD with a held-out share: the held-out dialogues are the seeded split's,
// written into the run folder; valid_loss (the masked tokens' NLL) and valid_ppl appear at every eval_every
// step and nowhere else; the run's model is best/'s. A resume from a checkpoint before and after the best
// evaluation ends in the same bytes and the same metrics, validation included.
func TestValidationRun(t *testing.T) {
	dir := t.TempDir()
	exp := futureTOD.Write(t, dir)
	full := filepath.Join(dir, "out")
	if err := trainertest.Run(t, exp, validSet, false); err != nil {
		t.Fatal(err)
	}
	keys := readValidKeys(t, full)
	_, root := trainertest.Data(t)
	all, err := datasets.ReadAll(root, []string{"woz2"}, datasets.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held, err := objectives.HeldOut(all, 0.05, 11) // the tiny run's seed
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(held) || len(keys) == 0 {
		t.Fatalf("%s lists %d dialogues, the split holds out %d", trainer.ValidFile, len(keys), len(held))
	}
	for _, k := range keys {
		if !held[k] {
			t.Fatalf("%s lists %s, which the seeded split does not hold out", trainer.ValidFile, k)
		}
	}

	ref := readMetricLines(t, full)
	checkSteps(t, "the full run", ref, 12)
	best, bestLoss := int64(0), math.Inf(1)
	for _, m := range ref {
		if (m.ValidLoss != nil) != (m.Step%2 == 0) {
			t.Fatalf("step %d: valid_loss %v; want one exactly at the even steps", m.Step, m.ValidLoss)
		}
		if m.ValidLoss == nil {
			continue
		}
		if m.ValidPPL == nil || math.Abs(*m.ValidPPL-math.Exp(*m.ValidLoss)) > 1e-9**m.ValidPPL || !(*m.ValidLoss > 0) {
			t.Fatalf("step %d: valid_loss %v, valid_ppl %v; want a positive NLL and its exponential", m.Step, *m.ValidLoss, m.ValidPPL)
		}
		if *m.ValidLoss < bestLoss {
			best, bestLoss = m.Step, *m.ValidLoss
		}
		if m.BestStep != best {
			t.Fatalf("step %d: best_step %d, want %d", m.Step, m.BestStep, best)
		}
	}
	if rec := readBest(t, full); rec.Step != best || rec.ValidLoss != bestLoss {
		t.Fatalf("best/ holds %+v, want step %d at %v", rec, best, bestLoss)
	}
	trainertest.SameFiles(t, filepath.Join(full, trainer.BestDir, "model.safetensors"), filepath.Join(full, "model", "model.safetensors"))
	t.Logf("valid_loss best at step %d (%.4f)", best, bestLoss)

	// A resume before the best evaluation writes best/ again; one after it finds best/ as the run left it.
	for _, from := range []int64{4, 10} {
		t.Run(fmt.Sprintf("from step %d", from), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			copyInto(t, rundir.At(full).CheckpointPath(from), rundir.At(out).CheckpointPath(from))
			copyInto(t, filepath.Join(full, trainer.ValidFile), filepath.Join(out, trainer.ValidFile))
			if best <= from { // best/ as a crash after this checkpoint left it
				if err := trainer.CopyFiles(filepath.Join(full, trainer.BestDir), filepath.Join(out, trainer.BestDir), ""); err != nil {
					t.Fatal(err)
				}
			}
			if err := trainertest.Run(t, exp, append(slices.Clone(validSet), fmt.Sprintf("output_dir=%q", out)), true); err != nil {
				t.Fatal(err)
			}
			trainertest.SameFiles(t, rundir.At(full).CheckpointPath(12), rundir.At(out).CheckpointPath(12))
			trainertest.SameFiles(t, filepath.Join(full, "model", "model.safetensors"), filepath.Join(out, "model", "model.safetensors"))
			for i, m := range readMetricLines(t, out) {
				if !sameTrajectory(m, ref[int(from)+i]) {
					t.Errorf("step %d differs from the full run:\n%+v\n%+v", m.Step, m, ref[int(from)+i])
				}
			}
		})
	}
	// A run folder whose held-out list is not this split's is refused on resume.
	t.Run("other held-out list", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		copyInto(t, rundir.At(full).CheckpointPath(10), rundir.At(out).CheckpointPath(10))
		if err := os.WriteFile(filepath.Join(out, trainer.ValidFile), []byte(`["woz2/none"]`), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := trainertest.New(t, exp, append(slices.Clone(validSet), fmt.Sprintf("output_dir=%q", out)), true)
		if err == nil || !strings.Contains(err.Error(), trainer.ValidFile) {
			t.Fatalf("resuming with another held-out list: %v, want a refusal naming %s", err, trainer.ValidFile)
		}
	})
}

func readValidKeys(t *testing.T, out string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, trainer.ValidFile))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	return keys
}

func readBest(t *testing.T, out string) trainer.Best {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, trainer.BestDir, trainer.BestRecord))
	if err != nil {
		t.Fatal(err)
	}
	var rec trainer.Best
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

func copyInto(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := trainer.CopyFile(src, dst); err != nil {
		t.Fatal(err)
	}
}

// scriptedObjective wraps another objective (setting inner) and answers validation with a script of
// losses by step (setting script, "step:loss,..."), to drive early stopping.
type scriptedObjective struct {
	objectives.Objective
	script map[int64]float64
	step   int64
}

const scriptedName = "scripted_validation"

func init() {
	_ = objectives.Register(scriptedName, objectives.Paper{}, func(s objectives.Settings) (objectives.Config, error) {
		c := scriptedConfig{script: map[int64]float64{}}
		rest := map[string]any{}
		for k, v := range s {
			switch k {
			case "inner":
				rest["name"] = v
			case "script":
				for _, part := range strings.Split(fmt.Sprint(v), ",") {
					step, loss, _ := strings.Cut(part, ":")
					n, err1 := strconv.ParseInt(step, 10, 64)
					x, err2 := strconv.ParseFloat(loss, 64)
					if err1 != nil || err2 != nil {
						return nil, fmt.Errorf("script %q", v)
					}
					c.script[n] = x
				}
			default:
				rest[k] = v
			}
		}
		var err error
		c.Config, err = objectives.Parse(rest)
		return c, err
	})
}

type scriptedConfig struct {
	objectives.Config
	script map[int64]float64
}

func (c scriptedConfig) Build(m *models.Model) (objectives.Objective, error) {
	o, err := c.Config.Build(m)
	return &scriptedObjective{Objective: o, script: c.script}, err
}

func (s *scriptedObjective) AfterStep(p objectives.Progress) error { s.step = p.Step; return nil }

func (s *scriptedObjective) ValidationLoss(any) (*ts.Tensor, int64, error) {
	x, ok := s.script[s.step]
	if !ok {
		return nil, 0, fmt.Errorf("no scripted loss at step %d", s.step)
	}
	return ts.MustScalarTensor(ts.FloatScalar(x), gotch.Double, gotch.CPU), 1, nil
}

// TestEarlyStopping: with patience 2, the run stops at the second evaluation without improvement on the
// best, checkpoints there, and its model is the best evaluation's; a resume of the stopped run trains no
// further.
func TestEarlyStopping(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Experiment(t, dir, "")
	out := filepath.Join(dir, "out")
	set := []string{"objective.name=" + `"` + scriptedName + `"`, `objective.inner="dse"`,
		`objective.script="2:5,4:3,6:4,8:3.5,10:1,12:1"`, "train.valid_share=0.02", "train.eval_every=2",
		"train.early_stopping_patience=2", "train.max_steps=12", "train.checkpoint_every=5", "train.keep_checkpoints=10"}
	if err := trainertest.Run(t, exp, set, false); err != nil {
		t.Fatal(err)
	}
	ms := readMetricLines(t, out)
	checkSteps(t, "the stopped run", ms, 8)
	want := map[int64]float64{2: 5, 4: 3, 6: 4, 8: 3.5}
	for _, m := range ms {
		if w, ok := want[m.Step]; ok != (m.ValidLoss != nil) || ok && (*m.ValidLoss != w || *m.ValidPPL != math.Exp(w)) {
			t.Errorf("step %d: valid_loss %v; want %v", m.Step, m.ValidLoss, w)
		}
	}
	if last := ms[len(ms)-1]; last.BestStep != 4 {
		t.Errorf("best_step %d at the stop, want 4", last.BestStep)
	}
	if got := trainertest.CheckpointSteps(t, out); fmt.Sprint(got) != "[5 8]" {
		t.Fatalf("checkpoints at %v, want [5 8]", got)
	}
	c, err := checkpoint.Read(rundir.At(out).CheckpointPath(8))
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Meta.Valid; v == nil || *v != (checkpoint.Valid{BestStep: 4, BestLoss: 3, Since: 2, Stopped: true}) {
		t.Fatalf("the stop's checkpoint records %+v", v)
	}
	if rec := readBest(t, out); rec.Step != 4 {
		t.Fatalf("best/ holds step %d's model, want 4", rec.Step)
	}
	trainertest.SameFiles(t, filepath.Join(out, trainer.BestDir, "model.safetensors"), filepath.Join(out, "model", "model.safetensors"))
	if err := trainertest.Run(t, exp, set, true); err != nil {
		t.Fatal(err)
	}
	if after := readMetricLines(t, out); len(after) != 8 {
		t.Errorf("the resumed stopped run logged up to %d lines, want the 8 it had", len(after))
	}
	if got := trainertest.CheckpointSteps(t, out); fmt.Sprint(got) != "[5 8]" {
		t.Errorf("after resuming the stopped run: checkpoints at %v, want [5 8]", got)
	}
}

// Validation reads the device at its own steps only: one read more at the eval_every step (the agreed sum
// and count of the held-out batches), none at a step that neither logs, checkpoints nor validates.
func TestValidationReadsOnlyAtEvalSteps(t *testing.T) {
	dir := t.TempDir()
	checkReadsPerStep(t, dir, func(step int) int64 {
		want := int64(0)
		if step%4 == 0 || step%6 == 0 {
			want = 2 // as TestNoReadsBetweenLogSteps
		}
		if step%8 == 0 {
			want++
		}
		return want
	}, "train.max_steps=12", "train.log_every=4", "train.checkpoint_every=6", "train.valid_share=0.02", "train.eval_every=8")
	ms := readMetricLines(t, filepath.Join(dir, "out"))
	for _, m := range ms {
		if (m.ValidLoss != nil) != (m.Step == 8) || m.ValidPPL != nil {
			t.Errorf("step %d: valid_loss %v, valid_ppl %v; want DSE's mean loss at step 8 alone, no perplexity", m.Step, m.ValidLoss, m.ValidPPL)
		}
	}
}
