package checkpoint

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"convrep/safetensors"
)

// Each rank's CPU and CUDA states go out under their own names and come back at their rank.
func TestRNGStatesPerRankAndDevice(t *testing.T) {
	c := sample()
	c.Meta.World = 3
	c.RNG = []RankRNG{
		{CPU: []byte{1, 2, 3}, CUDA: bytes.Repeat([]byte{4}, 16)},
		{CPU: []byte{5, 6, 7}, CUDA: bytes.Repeat([]byte{8}, 16)},
		{CPU: []byte{9, 10, 11}, CUDA: bytes.Repeat([]byte{12}, 16)},
	}
	path := filepath.Join(t.TempDir(), "checkpoints", "step-000000015.safetensors")
	if err := Write(path, c); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range f.Tensors {
		if strings.HasPrefix(x.Name, "rng/") {
			names = append(names, x.Name)
		}
	}
	want := "[rng/cpu rng/cpu/rank-1 rng/cpu/rank-2 rng/cuda rng/cuda/rank-1 rng/cuda/rank-2]"
	if got := fmt.Sprint(slices.Sorted(slices.Values(names))); got != want {
		t.Errorf("RNG tensors %s, want %s", got, want)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back.RNG) != fmt.Sprint(c.RNG) {
		t.Errorf("read back %v, wrote %v", back.RNG, c.RNG)
	}
}

// A checkpoint from before the CUDA states (rng/cpu and rng/cpu/rank-<r> alone) still reads, as CPU states.
func TestRNGOlderCheckpointsRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints", "step-000000015.safetensors")
	if err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	rewrite(t, path, func(m map[string]any, _ []safetensors.Tensor) { m["world"] = 2 })
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Tensors = append(f.Tensors, safetensors.Tensor{Name: "rng/cpu/rank-1", DType: "U8", Shape: []int64{2}, Data: []byte{7, 8}})
	if err := safetensors.WriteFile(path, f.Metadata, f.Tensors); err != nil {
		t.Fatal(err)
	}
	rewrite(t, path, func(m map[string]any, _ []safetensors.Tensor) { delete(m, "checksum") })
	c, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []RankRNG{{CPU: []byte{1, 2, 3}}, {CPU: []byte{7, 8}}}
	if fmt.Sprint(c.RNG) != fmt.Sprint(want) || c.RNG[0].CUDA != nil || c.RNG[1].CUDA != nil {
		t.Errorf("read %v, want %v with no CUDA states", c.RNG, want)
	}
}

// RNG tensors of no rank, of a rank the run did not have, of another dtype or empty are refused by name.
func TestRNGCraftedNamesRefused(t *testing.T) {
	for _, tc := range []struct {
		tensor safetensors.Tensor
		want   string
	}{
		{safetensors.Tensor{Name: "rng/tpu", DType: "U8", Shape: []int64{1}, Data: []byte{1}}, "names no generator"},
		{safetensors.Tensor{Name: "rng/cuda/rank-0", DType: "U8", Shape: []int64{1}, Data: []byte{1}}, "names no generator"},
		{safetensors.Tensor{Name: "rng/cuda/rank-01", DType: "U8", Shape: []int64{1}, Data: []byte{1}}, "names no generator"},
		{safetensors.Tensor{Name: "rng/cpu/rank-99999999999", DType: "U8", Shape: []int64{1}, Data: []byte{1}}, "names no generator"},
		{safetensors.Tensor{Name: "rng/cpu/rank-1", DType: "U8", Shape: []int64{1}, Data: []byte{1}}, "rank 1, but 1 ranks wrote"},
		{safetensors.Tensor{Name: "rng/cuda", DType: "F32", Shape: []int64{1}, Data: []byte{1, 2, 3, 4}}, "want a non-empty U8 state"},
		{safetensors.Tensor{Name: "rng/cuda", DType: "U8", Shape: []int64{0}, Data: []byte{}}, "want a non-empty U8 state"},
	} {
		t.Run(tc.tensor.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoints", "step-000000015.safetensors")
			if err := Write(path, sample()); err != nil {
				t.Fatal(err)
			}
			f, err := safetensors.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := safetensors.WriteFile(path, f.Metadata, append(f.Tensors, tc.tensor)); err != nil {
				t.Fatal(err)
			}
			rewrite(t, path, func(m map[string]any, _ []safetensors.Tensor) { delete(m, "checksum") })
			_, err = Read(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.tensor.Name) {
				t.Fatalf("Read: %v; want an error naming %s and saying %q", err, tc.tensor.Name, tc.want)
			}
		})
	}
}

// Write refuses a checkpoint without rank 0's CPU state, which Read would refuse.
func TestWriteWantsRank0CPUState(t *testing.T) {
	c := sample()
	c.RNG = []RankRNG{{CUDA: make([]byte, 16)}}
	if err := Write(filepath.Join(t.TempDir(), "checkpoints", "step-000000015.safetensors"), c); err == nil || !strings.Contains(err.Error(), "no CPU RNG state") {
		t.Fatalf("Write: %v", err)
	}
}
