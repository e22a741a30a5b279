package futuretod_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"convrep/checkpoint"
	"convrep/experiment"
	"convrep/rundir"
	"convrep/safetensors"
	"convrep/trainer"
	"convrep/trainer/trainertest"

	"go.uber.org/zap/zaptest"
)

// futureTOD writes a FutureTOD experiment on a tiny random BERT and 64 woz2 dialogues (eight batches of eight
// per epoch), with dropout on, and returns its path; output goes to dir/out. objective is more of the
// [objective] table's lines.
func futureTOD(t *testing.T, dir, objective string) string {
	t.Helper()
	return trainertest.Tiny{
		Name:      "tiny_futuretod",
		Seed:      11,
		MaxLength: 48,
		Dropout:   0.2,
		Data:      "max_examples = 64",
		Objective: "name = \"futuretod\"\ntop_k_layers = 2\n" + objective,
		Train:     "batch_size = 8\nepochs = 3\nmax_steps = 12\nlr = 2e-3\ncheckpoint_every = 2\nkeep_checkpoints = 20\nlog_every = 1\nthreads = 1",
	}.Write(t, dir)
}

// ckptTensors reads one checkpoint's tensors by name.
func ckptTensors(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, x := range f.Tensors {
		out[x.Name] = x.Data
	}
	return out
}

// teacherMatches compares the teacher stored in checkpoint a with the student (param/) of checkpoint b, or
// with a's own teacher when b is a teacher too (teacherOf): true when every tensor is the same bytes.
func teacherMatches(t *testing.T, a map[string][]byte, b map[string][]byte, prefix string) bool {
	t.Helper()
	n := 0
	for name, data := range a {
		param, ok := strings.CutPrefix(name, checkpoint.ObjectivePrefix+"teacher.")
		if !ok {
			continue
		}
		n++
		other, ok := b[prefix+param]
		if !ok {
			t.Fatalf("no %s%s beside %s", prefix, param, name)
		}
		if !bytes.Equal(data, other) {
			return false
		}
	}
	if n == 0 {
		t.Fatal("the checkpoint holds no teacher")
	}
	return true
}

// In a real run the checkpoints show the teacher equal to the student right after each refresh and frozen
// in between, never moved by the optimiser: every 2 steps, and every epoch (8 steps) as in the paper.
func TestFutureTODTeacherInCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name      string
		objective string
		refreshed func(step int64) bool
	}{
		{"every 3 steps", "refresh_every = 3\nrefresh_unit = \"steps\"", func(s int64) bool { return s%3 == 0 }},
		{"every epoch", "refresh_every = 1", func(s int64) bool { return s%8 == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exp := futureTOD(t, dir, tc.objective)
			out := filepath.Join(dir, "out")
			if err := trainertest.Run(t, exp, []string{"train.checkpoint_every=1"}, false); err != nil {
				t.Fatal(err)
			}
			last := map[string][]byte{} // the teacher as last refreshed
			refreshes := 0
			for step := int64(1); step <= 12; step++ {
				c := ckptTensors(t, rundir.At(out).CheckpointPath(step))
				if tc.refreshed(step) {
					refreshes++
					if !teacherMatches(t, c, c, checkpoint.ParamPrefix) {
						t.Fatalf("step %d: right after a refresh the teacher differs from the student", step)
					}
				} else {
					if teacherMatches(t, c, c, checkpoint.ParamPrefix) {
						t.Fatalf("step %d: the teacher equals the student without a refresh: the optimiser moved it or a refresh came early", step)
					}
					if len(last) > 0 && !teacherMatches(t, c, last, checkpoint.ObjectivePrefix+"teacher.") {
						t.Fatalf("step %d: the teacher changed between refreshes", step)
					}
				}
				if tc.refreshed(step) || len(last) == 0 {
					last = c
				}
			}
			if refreshes == 0 {
				t.Fatal("no refresh in 12 steps")
			}
		})
	}
}

// A FutureTOD run resumed from each of its checkpoints, those at an epoch's end included (step 8, right
// after the refresh), ends in the same bytes as the uninterrupted run, teacher included.
func TestFutureTODResumeIsBitIdentical(t *testing.T) {
	dir := t.TempDir()
	exp := futureTOD(t, dir, "refresh_every = 1")
	full := filepath.Join(dir, "out")
	if err := trainertest.Run(t, exp, nil, false); err != nil {
		t.Fatal(err)
	}
	ref := trainertest.Lines(t, full)
	trainertest.CheckSteps(t, "the full run", trainertest.StepsOf(ref), 12)
	if c := ckptTensors(t, rundir.At(full).CheckpointPath(12)); !hasPrefix(c, checkpoint.ObjectivePrefix+"teacher.") {
		t.Fatal("the final checkpoint holds no teacher")
	}
	for _, from := range []int64{4, 8, 10} {
		t.Run(fmt.Sprintf("from step %d", from), func(t *testing.T) {
			out := trainertest.ResumeFolder(t, full, from)
			if err := trainertest.Run(t, exp, []string{fmt.Sprintf("output_dir=%q", out)}, true); err != nil {
				t.Fatal(err)
			}
			trainertest.SameFiles(t, rundir.At(full).CheckpointPath(12), rundir.At(out).CheckpointPath(12))
			trainertest.SameFiles(t, filepath.Join(full, "model", "model.safetensors"), filepath.Join(out, "model", "model.safetensors"))
			for i, m := range trainertest.Lines(t, out) {
				if !reflect.DeepEqual(m.Trajectory, ref[int(from)+i].Trajectory) {
					t.Errorf("step %d differs from the full run:\n%+v\n%+v", m.Step, m, ref[int(from)+i])
				}
			}
		})
	}
	// A checkpoint whose teacher is missing is refused, not resumed with a wrong teacher.
	t.Run("checkpoint without teacher", func(t *testing.T) {
		f, err := safetensors.ReadFile(rundir.At(full).CheckpointPath(10))
		if err != nil {
			t.Fatal(err)
		}
		var kept []safetensors.Tensor
		for _, x := range f.Tensors {
			if !strings.HasPrefix(x.Name, checkpoint.ObjectivePrefix) {
				kept = append(kept, x)
			}
		}
		out := filepath.Join(t.TempDir(), "out")
		if err := os.MkdirAll(rundir.At(out).CheckpointDir(), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := safetensors.WriteFile(rundir.At(out).CheckpointPath(10), trainertest.Signed(t, f.Metadata, kept), kept); err != nil {
			t.Fatal(err)
		}
		e, err := experiment.Load(exp, []string{fmt.Sprintf("output_dir=%q", out)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = trainer.New(t.Context(), e, trainer.Options{Resume: true}, zaptest.NewLogger(t))
		if err == nil || !strings.Contains(err.Error(), "objective's state") {
			t.Fatalf("resuming without the teacher: %v, want a refusal naming the objective's state", err)
		}
	})
}

func hasPrefix(m map[string][]byte, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// Thirty steps of the tiny run lower the loss, both of its parts included.
func TestFutureTODLossFalls(t *testing.T) {
	dir := t.TempDir()
	exp := futureTOD(t, dir, "refresh_every = 2")
	if err := trainertest.Run(t, exp, []string{"train.max_steps=24", "train.checkpoint_every=100"}, false); err != nil {
		t.Fatal(err)
	}
	ms := trainertest.Lines(t, filepath.Join(dir, "out"))
	trainertest.CheckSteps(t, "the run", trainertest.StepsOf(ms), 24)
	avg := func(ms []trainertest.Line, key string) float64 {
		s := 0.0
		for _, m := range ms {
			if key == "" {
				s += m.Loss
			} else {
				s += m.Objective[key]
			}
		}
		return s / float64(len(ms))
	}
	for _, key := range []string{"", "mlm", "distill"} {
		first, last := avg(ms[:4], key), avg(ms[len(ms)-4:], key)
		t.Logf("%q: first four steps %.4f, last four %.4f", key, first, last)
		if !(last < first) {
			t.Errorf("%q did not fall: first four steps %.4f, last four %.4f", key, first, last)
		}
	}
}
