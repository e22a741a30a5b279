package checkpoint

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"convrep/safetensors"
)

func sample() *File {
	w, _ := safetensors.FromFloat32s("", []int64{2, 2}, []float32{1, 2, 3, 4})
	m, _ := safetensors.FromFloat32s("w.exp_avg", []int64{2, 2}, []float32{0.1, 0.2, 0.3, 0.4})
	return &File{
		Meta: Meta{Format: FormatName, Experiment: "digest", Position: Position{Step: 15, Epoch: 1, Batch: 3}, Window: &Window{LossSum: 2.5, Steps: 5,
			Objective: map[string]float64{"pos_cos": 4.75}, ObjectiveCount: map[string]int64{"pos_cos": 5}}},
		Params: map[string]safetensors.Tensor{"w": w}, Optim: []safetensors.Tensor{m},
		Objective: map[string]safetensors.Tensor{}, RNG: []RankRNG{{CPU: []byte{1, 2, 3}}},
	}
}

// rewrite reads the checkpoint at path as a plain safetensors file, lets edit change its metadata (as
// JSON) and its tensors, and writes it back, so that a test crafts a file no Write would make.
func rewrite(t *testing.T, path string, edit func(meta map[string]any, tensors []safetensors.Tensor)) {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(f.Metadata["convrep"]), &meta); err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		f.Tensors[i].Data = bytes.Clone(f.Tensors[i].Data)
	}
	edit(meta, f.Tensors)
	b, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.WriteFile(path, map[string]string{"convrep": string(b)}, f.Tensors); err != nil {
		t.Fatal(err)
	}
}

func tensorNamed(ts []safetensors.Tensor, name string) *safetensors.Tensor {
	for i := range ts {
		if ts[i].Name == name {
			return &ts[i]
		}
	}
	return nil
}

func TestReadChecksCrafted(t *testing.T) {
	position := func(step, epoch, batch int64) func(map[string]any, []safetensors.Tensor) {
		return func(m map[string]any, _ []safetensors.Tensor) {
			m["position"] = map[string]any{"step": step, "epoch": epoch, "batch": batch}
		}
	}
	for _, tc := range []struct {
		name          string
		edit          func(meta map[string]any, tensors []safetensors.Tensor)
		want          string // "" when the file must read
		wantUnchecked bool
	}{
		{name: "as written", edit: func(map[string]any, []safetensors.Tensor) {}},
		{name: "one bit of a parameter flipped", want: "does not match its checksum",
			edit: func(_ map[string]any, ts []safetensors.Tensor) { tensorNamed(ts, "param/w").Data[5] ^= 0x01 }},
		{name: "a moment zeroed", want: "does not match its checksum",
			edit: func(_ map[string]any, ts []safetensors.Tensor) { clear(tensorNamed(ts, "optim/w.exp_avg").Data) }},
		{name: "shape changed, same bytes", want: "does not match its checksum",
			edit: func(_ map[string]any, ts []safetensors.Tensor) { tensorNamed(ts, "param/w").Shape = []int64{4, 1} }},
		{name: "checksum edited", want: "does not match its checksum",
			edit: func(m map[string]any, _ []safetensors.Tensor) { m["checksum"] = "sha256:00" }},
		{name: "written before checksums", wantUnchecked: true,
			edit: func(m map[string]any, _ []safetensors.Tensor) { delete(m, "checksum") }},
		{name: "negative batch", edit: position(15, 1, -1), want: "position step 15, epoch 1, batch -1: none may be negative"},
		{name: "negative epoch", edit: position(15, -2, 3), want: "epoch -2"},
		{name: "negative step", edit: position(math.MinInt64, 0, 0), want: "none may be negative"},
		{name: "window longer than the run", want: "metrics window of 16 steps",
			edit: func(m map[string]any, _ []safetensors.Tensor) {
				m["window"] = map[string]any{"loss_sum": 1, "steps": 16}
			}},
		{name: "negative window", want: "metrics window of -1 steps",
			edit: func(m map[string]any, _ []safetensors.Tensor) {
				m["window"] = map[string]any{"loss_sum": 1, "steps": -1}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoints", "step-000000015.safetensors")
			if err := Write(path, sample()); err != nil {
				t.Fatal(err)
			}
			rewrite(t, path, tc.edit)
			c, err := Read(path)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
					t.Fatalf("Read: %v; want an error naming %s and %q", err, path, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if c.Unchecked != tc.wantUnchecked {
				t.Errorf("Unchecked = %v, want %v", c.Unchecked, tc.wantUnchecked)
			}
			if c.Meta.Position != (Position{Step: 15, Epoch: 1, Batch: 3}) || !reflect.DeepEqual(*c.Meta.Window, Window{LossSum: 2.5, Steps: 5,
				Objective: map[string]float64{"pos_cos": 4.75}, ObjectiveCount: map[string]int64{"pos_cos": 5}}) {
				t.Errorf("read back %+v, window %+v", c.Meta.Position, c.Meta.Window)
			}
		})
	}
}

// Write stores the checksum of what it wrote, which the file's own tensors hash to.
func TestWriteStoresChecksum(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.safetensors")
	if err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m Meta
	if err := json.Unmarshal([]byte(f.Metadata["convrep"]), &m); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Checksum, "sha256:") || m.Checksum != Checksum(f.Tensors) {
		t.Errorf("stored checksum %q, the tensors hash to %q", m.Checksum, Checksum(f.Tensors))
	}
}

// BenchmarkChecksum measures what the checksum adds to each checkpoint's write and read, in bytes of
// tensor data per second.
func BenchmarkChecksum(b *testing.B) {
	data := make([]byte, 64<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	tensors := []safetensors.Tensor{{Name: "param/w", DType: "U8", Shape: []int64{int64(len(data))}, Data: data}}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Checksum(tensors)
	}
}
