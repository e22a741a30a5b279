package trainer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"convrep/experiment"
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
