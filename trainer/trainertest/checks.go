package trainertest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"convrep/checkpoint"
	"convrep/rundir"
	"convrep/safetensors"
)

// The checks on what a run leaves: its checkpoints, its files byte for byte, its weights, its metrics lines.

// CheckpointSteps lists the steps of the checkpoints under out, ascending.
func CheckpointSteps(t *testing.T, out string) []int64 {
	t.Helper()
	entries, err := os.ReadDir(rundir.At(out).CheckpointDir())
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var steps []int64
	for _, e := range entries {
		if n, ok := rundir.StepOf(e.Name()); ok {
			steps = append(steps, n)
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })
	return steps
}

// HashFiles maps each file directly under dir to the SHA-256 of its bytes.
func HashFiles(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out, err := HashDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// HashDir is HashFiles returning its error.
func HashDir(dir string) (map[string][32]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][32]byte{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out, nil
}

// SameHashes reports whether two HashFiles maps are equal.
func SameHashes(a, b map[string][32]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// NonFiniteParams names the param/ tensors of a checkpoint that hold a NaN or an infinity.
func NonFiniteParams(t *testing.T, path string) []string {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	params := 0
	for _, x := range f.Tensors {
		if !strings.HasPrefix(x.Name, checkpoint.ParamPrefix) {
			continue
		}
		params++
		vs, err := x.Float32s()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, v := range vs {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				bad = append(bad, x.Name)
				break
			}
		}
	}
	if params == 0 {
		t.Fatalf("%s holds no parameters", path)
	}
	return bad
}

// SameFiles compares two files byte for byte; when they differ it says which tensors do, if both are
// safetensors files.
func SameFiles(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(x, y) {
		return
	}
	t.Errorf("%s and %s differ (%d and %d bytes)", a, b, len(x), len(y))
	fx, errx := safetensors.Parse(x)
	fy, erry := safetensors.Parse(y)
	if errx != nil || erry != nil {
		return
	}
	if fmt.Sprint(fx.Metadata) != fmt.Sprint(fy.Metadata) {
		t.Errorf("metadata differs:\n%v\n%v", fx.Metadata, fy.Metadata)
	}
	shown := 0
	for _, tx := range fx.Tensors {
		ty, ok := fy.Lookup(tx.Name)
		if !ok {
			t.Errorf("tensor %s only in %s", tx.Name, a)
		} else if !bytes.Equal(tx.Data, ty.Data) && shown < 10 {
			t.Errorf("tensor %s differs", tx.Name)
			shown++
		}
	}
}

// CopyRun copies a run's output folder (its files and checkpoints) to a new folder and returns it.
func CopyRun(t *testing.T, out string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "out")
	for _, sub := range []string{"", "checkpoints"} {
		if err := os.MkdirAll(filepath.Join(dst, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(filepath.Join(out, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(out, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, sub, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dst
}

// MetricLines reads a run's metrics.jsonl in out, each line as an M (trainer.Metric).
func MetricLines[M any](t *testing.T, out string) []M {
	t.Helper()
	b, err := os.ReadFile(rundir.At(out).MetricsPath())
	if err != nil {
		t.Fatal(err)
	}
	var ms []M
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		var m M
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s metrics.jsonl:%d: %v", out, line, err)
		}
		ms = append(ms, m)
	}
	return ms
}

// Line is a metrics line as an objective's tests read it: its step, loss and objective metrics, and Trajectory,
// every field that says something about training (all but the timings), to compare two runs with.
type Line struct {
	Step       int64              `json:"step"`
	Loss       float64            `json:"loss"`
	Objective  map[string]float64 `json:"objective"`
	Trajectory map[string]any     `json:"-"`
}

// timings are the metrics line's fields that differ between two runs of the same steps.
var timings = []string{"pairs_per_s", "step_s", "data_wait_s", "elapsed_s"}

// Lines reads a run's metrics.jsonl in out.
func Lines(t *testing.T, out string) []Line {
	t.Helper()
	raw := MetricLines[map[string]any](t, out)
	lines := MetricLines[Line](t, out)
	for i := range lines {
		for _, k := range timings {
			delete(raw[i], k)
		}
		lines[i].Trajectory = raw[i]
	}
	return lines
}

// StepsOf are the lines' steps, in order.
func StepsOf(lines []Line) []int64 {
	steps := make([]int64, len(lines))
	for i, l := range lines {
		steps[i] = l.Step
	}
	return steps
}

// CheckSteps wants a run's metrics lines to be at steps 1..n, each once and in order (log_every is 1).
func CheckSteps(t *testing.T, run string, steps []int64, n int64) {
	t.Helper()
	var got []string
	ok := len(steps) == int(n)
	for i, s := range steps {
		got = append(got, fmt.Sprint(s))
		ok = ok && s == int64(i+1)
	}
	if !ok {
		t.Errorf("%s's metrics.jsonl steps are %s, want 1..%d each once", run, strings.Join(got, ","), n)
	}
}

// Signed returns a checkpoint's metadata with the checksum of tensors, so that a test's checkpoint, made
// without some tensors, reaches the checks behind the checksum.
func Signed(t *testing.T, meta map[string]string, tensors []safetensors.Tensor) map[string]string {
	t.Helper()
	var m checkpoint.Meta
	if err := json.Unmarshal([]byte(meta["convrep"]), &m); err != nil {
		t.Fatal(err)
	}
	m.Checksum = checkpoint.Checksum(tensors)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"convrep": string(b)}
}

// Newest is the step of the newest checkpoint under out, 0 if none.
func Newest(t *testing.T, out string) int64 {
	steps := CheckpointSteps(t, out)
	if len(steps) == 0 {
		return 0
	}
	return steps[len(steps)-1]
}

// ResumeFolder makes a fresh output folder holding nothing but full's checkpoint of step, for a run that must
// resume from it, and returns the folder's path.
func ResumeFolder(t *testing.T, full string, step int64) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(rundir.At(out).CheckpointDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(rundir.At(full).CheckpointPath(step))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rundir.At(out).CheckpointPath(step), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
