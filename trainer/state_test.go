package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
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
	"convrep/trainer/trainertest"
)

// The sizes validation lets through still cannot wrap or overflow the run's step counts.
func TestRunStepsBounds(t *testing.T) {
	for _, tc := range []struct {
		name                string
		examples            int
		batch, accum, epoch int
		maxSteps            int64
		keepLast            bool
		perEpoch, total     int64
		want                string // error; "" for none
	}{
		{name: "epochs", examples: 100, batch: 8, accum: 2, epoch: 3, perEpoch: 6, total: 18},
		{name: "max_steps fewer", examples: 100, batch: 8, accum: 1, epoch: 3, maxSteps: 5, perEpoch: 12, total: 5},
		{name: "max_steps alone", examples: 100, batch: 8, accum: 1, maxSteps: 50, perEpoch: 12, total: 50},
		{name: "last partial batch kept", examples: 100, batch: 8, accum: 2, epoch: 3, keepLast: true, perEpoch: 7, total: 21},
		{name: "a rest of one dropped", examples: 97, batch: 8, accum: 2, epoch: 3, keepLast: true, perEpoch: 6, total: 18},
		{name: "only a partial batch", examples: 7, batch: 8, accum: 1, epoch: 1, keepLast: true, perEpoch: 1, total: 1},
		{name: "product wraps to zero", examples: 100, batch: 1 << 32, accum: 1 << 32, epoch: 1,
			want: "train.batch_size 4294967296 × train.grad_accumulation 4294967296 is no batch"},
		{name: "product wraps negative", examples: 100, batch: 1 << 62, accum: 3, epoch: 1, want: "is no batch"},
		{name: "zero accumulation", examples: 100, batch: 8, accum: 0, epoch: 1, want: "is no batch"},
		{name: "no full batch", examples: 7, batch: 8, accum: 1, epoch: 1, want: "7 examples make no full batch of 8×1"},
		{name: "epochs × steps overflows", examples: 1 << 40, batch: 2, accum: 1, epoch: math.MaxInt32 << 2,
			want: "steps per epoch is more steps than a run can count"},
		{name: "negative epochs", examples: 100, batch: 8, accum: 1, epoch: -1, want: "train.epochs -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drop := !tc.keepLast
			perEpoch, total, err := runSteps(tc.examples, 1, experiment.TrainConfig{BatchSize: tc.batch, GradAccumulation: tc.accum,
				Epochs: tc.epoch, MaxSteps: tc.maxSteps, DropLast: &drop})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("runSteps = %d, %d, %v; want an error with %q", perEpoch, total, err, tc.want)
				}
				return
			}
			if err != nil || perEpoch != tc.perEpoch || total != tc.total {
				t.Fatalf("runSteps = %d, %d, %v; want %d, %d", perEpoch, total, err, tc.perEpoch, tc.total)
			}
		})
	}
}

// A metrics line longer than bufio.Scanner's 64 KiB must not hide the lines after it, neither when a
// resume trims the file nor when the loss curve reads it.
func TestMetricsLinesOfAnyLength(t *testing.T) {
	long := Metric{Step: 1, Loss: 1, Objective: map[string]float64{}}
	for i := range 8000 { // about 200 KiB of JSON
		long.Objective[fmt.Sprintf("a_rather_long_metric_name_%05d", i)] = float64(i)
	}
	var file bytes.Buffer
	for _, m := range []Metric{long, {Step: 2, Loss: 2}, {Step: 3, Loss: 3}, {Step: 4, Loss: 4}} {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		file.Write(append(b, '\n'))
	}
	file.WriteString(`{"step": 5, "lo`) // torn by a crash mid-write
	if n := bytes.IndexByte(file.Bytes(), '\n'); n < 128<<10 {
		t.Fatalf("first line is only %d bytes", n)
	}
	for _, tc := range []struct {
		name       string
		resumeStep int64
		want       []int64
	}{
		{name: "resume at 3", resumeStep: 3, want: []int64{1, 2, 3}},
		{name: "resume at 1", resumeStep: 1, want: []int64{1}},
		{name: "resume past the end", resumeStep: 9, want: []int64{1, 2, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			path := filepath.Join(out, "metrics.jsonl")
			if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := openMetrics(out, tc.resumeStep, false, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			l.close()
			ms, err := readMetrics(path)
			if err != nil {
				t.Fatal(err)
			}
			var steps []int64
			for _, m := range ms {
				steps = append(steps, m.Step)
			}
			if !slices.Equal(steps, tc.want) {
				t.Errorf("steps kept %v, want %v", steps, tc.want)
			}
			if len(ms[0].Objective) != len(long.Objective) {
				t.Errorf("the long line came back with %d of %d values", len(ms[0].Objective), len(long.Objective))
			}
		})
	}
}

// Each checkpoint is preceded by an fsync of metrics.jsonl holding the line of the checkpoint's step, so a
// crash cannot leave a checkpoint whose metrics were lost.
func TestMetricsSyncedAtEachCheckpoint(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Experiment(t, dir, "")
	out := filepath.Join(dir, "out")
	type synced struct{ lastLine, newestCheckpoint int64 }
	var syncs []synced
	saved := fsync
	fsync = func(f *os.File) error {
		ms, err := readMetrics(f.Name())
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
	t.Cleanup(func() { fsync = saved })
	if err := train(t, exp, []string{"train.max_steps=6", "train.checkpoint_every=2", "train.log_every=1"}, false); err != nil {
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
	if err := train(t, exp, set, false); err != nil {
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
	if err := train(t, exp, append(set, "output_dir="+quote(resumed)), true); err != nil {
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
			tr, err := New(context.Background(), e, Options{Resume: true}, zap.New(core))
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			tr.cl.close()
			if tr.pos.Step != 2 {
				t.Errorf("resumed at step %d, want the previous checkpoint's 2", tr.pos.Step)
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
	tr, err := New(context.Background(), e, Options{Resume: true}, zap.New(core))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	tr.cl.close()
	if tr.pos.Step != 3 {
		t.Errorf("resumed at step %d, want 3", tr.pos.Step)
	}
	warned := logs.FilterMessageSnippet("no checksum").FilterField(zap.String("file", newest)).Len()
	if warned != 1 {
		t.Errorf("%d warnings naming %s as unchecked, want 1; logs %v", warned, newest, logs.All())
	}
}
