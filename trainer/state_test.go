package trainer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"convrep/checkpoint"
	"convrep/experiment"
	"convrep/rundir"
	"convrep/safetensors"
	"convrep/trainer"
	"convrep/trainer/trainertest"
)

// Each checkpoint is preceded by an fsync of metrics.jsonl holding the line of the checkpoint's step, so a
// crash cannot leave a checkpoint whose metrics were lost.
func TestMetricsSyncedAtEachCheckpoint(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Experiment(t, dir, "")
	out := filepath.Join(dir, "out")
	type synced struct{ lastLine, newestCheckpoint int64 }
	var syncs []synced
	saved := *trainer.Fsync
	*trainer.Fsync = func(f *os.File) error {
		ms, err := trainer.ReadMetrics(f.Name())
		if err != nil {
			return err
		}
		newest := int64(-1)
		if steps := trainertest.CheckpointSteps(t, out); len(steps) > 0 {
			newest = steps[len(steps)-1]
		}
		syncs = append(syncs, synced{ms[len(ms)-1].Step, newest})
		return saved(f)
	}
	t.Cleanup(func() { *trainer.Fsync = saved })
	if err := trainertest.Run(t, exp, []string{"train.max_steps=6", "train.checkpoint_every=2", "train.log_every=1"}, false); err != nil {
		t.Fatal(err)
	}
	want := []synced{{2, -1}, {4, 2}, {6, 4}} // metrics at the step synced, the step's checkpoint not yet written
	if !slices.Equal(syncs, want) {
		t.Errorf("metrics synced at (last line, newest checkpoint) %v, want %v", syncs, want)
	}
	if got := trainertest.CheckpointSteps(t, out); !slices.Equal(got, []int64{4, 6}) {
		t.Errorf("checkpoints %v, want [4 6]", got)
	}
}

// A run stopped right after its checkpoint at step 15 and resumed must log at step 20 the mean loss of
// steps 11-20, as the uninterrupted run does, not that of 16-20.
func TestResumedFirstLineCoversTheWholeWindow(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Experiment(t, dir, "")
	full := filepath.Join(dir, "out")
	set := []string{"train.max_steps=20", "train.log_every=10", "train.checkpoint_every=5"}
	if err := trainertest.Run(t, exp, set, false); err != nil {
		t.Fatal(err)
	}
	want := readMetricLines(t, full)
	if len(want) != 2 || want[1].Step != 20 {
		t.Fatalf("uninterrupted run logged %+v, want lines at steps 10 and 20", want)
	}

	// The stop: everything after the checkpoint at step 15 is gone.
	resumed := trainertest.CopyRun(t, full)
	if err := os.Remove(rundir.At(resumed).CheckpointPath(20)); err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Read(rundir.At(resumed).CheckpointPath(15))
	if err != nil {
		t.Fatal(err)
	}
	if w := c.Meta.Window; w == nil || w.Steps != 5 {
		t.Fatalf("checkpoint at step 15 keeps window %+v, want the 5 steps since the line at 10", w)
	}
	if err := trainertest.Run(t, exp, append(set, "output_dir="+quote(resumed)), true); err != nil {
		t.Fatal(err)
	}
	got := readMetricLines(t, resumed)
	if len(got) != 2 || !sameTrajectory(got[1], want[1]) {
		t.Fatalf("resumed run logged\n%+v\nwant the uninterrupted run's\n%+v", got, want)
	}
}

// rewriteCheckpoint lets edit change a checkpoint's metadata and tensors, keeping the checksum of what it
// holds, so that the test reaches the checks behind the checksum.
func rewriteCheckpoint(t *testing.T, path string, edit func(m *checkpoint.Meta)) {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m checkpoint.Meta
	if err := json.Unmarshal([]byte(f.Metadata["convrep"]), &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.WriteFile(path, map[string]string{"convrep": string(b)}, f.Tensors); err != nil {
		t.Fatal(err)
	}
}

// A newest checkpoint that cannot be resumed makes --resume take the one before, with a warning naming the
// file and the problem.
func TestResumeFallsBackToThePreviousCheckpoint(t *testing.T) {
	exp, out := finishedRun(t)
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, path string)
		want    string
	}{
		{name: "a data byte flipped", want: "does not match its checksum", corrupt: func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)-100] ^= 0x10
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "cut short", want: "file truncated", corrupt: func(t *testing.T, path string) {
			if err := os.Truncate(path, 4096); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "negative batch", want: "batch -1: none may be negative", corrupt: func(t *testing.T, path string) {
			rewriteCheckpoint(t, path, func(m *checkpoint.Meta) { m.Position.Batch = -1 })
		}},
		{name: "batch past the epoch", want: "position batch 1000 is past the 32 batches of an epoch", corrupt: func(t *testing.T, path string) {
			rewriteCheckpoint(t, path, func(m *checkpoint.Meta) { m.Position.Batch = 1000 })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			moved := trainertest.CopyRun(t, out)
			newest := rundir.At(moved).CheckpointPath(3)
			tc.corrupt(t, newest)
			e, err := experiment.Load(exp, []string{"output_dir=" + quote(moved)})
			if err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zap.WarnLevel)
			tr, err := trainer.New(context.Background(), e, trainer.Options{Resume: true}, zap.New(core))
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			tr.CloseCluster()
			if tr.Position().Step != 2 {
				t.Errorf("resumed at step %d, want the previous checkpoint's 2", tr.Position().Step)
			}
			warned := false
			for _, l := range logs.FilterMessageSnippet("falling back").All() {
				f := l.ContextMap()
				warned = warned || (f["file"] == newest && strings.Contains(fmt.Sprint(f["problem"]), tc.want))
			}
			if !warned {
				t.Errorf("no warning naming %s and %q among %v", newest, tc.want, logs.All())
			}
		})
	}
}

// A checkpoint written before checksums existed is resumed, its tensors unchecked, with a warning saying so.
func TestResumeAcceptsACheckpointWithoutChecksum(t *testing.T) {
	exp, out := finishedRun(t)
	newest := rundir.At(out).CheckpointPath(3)
	rewriteCheckpoint(t, newest, func(m *checkpoint.Meta) { m.Checksum = "" })
	e, err := experiment.Load(exp, nil)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	tr, err := trainer.New(context.Background(), e, trainer.Options{Resume: true}, zap.New(core))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	tr.CloseCluster()
	if tr.Position().Step != 3 {
		t.Errorf("resumed at step %d, want 3", tr.Position().Step)
	}
	warned := logs.FilterMessageSnippet("no checksum").FilterField(zap.String("file", newest)).Len()
	if warned != 1 {
		t.Errorf("%d warnings naming %s as unchecked, want 1; logs %v", warned, newest, logs.All())
	}
}
