package trainer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"convrep/safetensors"
)

// A checkpoint is one safetensors file holding everything a run needs to continue exactly: every trainable
// tensor ("param/<name>"), the optimiser's moments ("optim/<name>..."), the objective's own state when it
// has one ("objective/<name>", such as FutureTOD's teacher), libtorch's CPU generator state ("rng/cpu",
// bytes), and, as JSON in the metadata, the position in the data and the optimiser's scalars.
// It is written atomically (temporary file, fsync, rename), so a run killed at any moment leaves the
// previous checkpoint or the new one, never a torn file.

const (
	checkpointFormat = "convrep-checkpoint-1"
	paramPrefix      = "param/"
	optimPrefix      = "optim/"
	objectivePrefix  = "objective/"
	rngKey           = "rng/cpu"
	rngRankPrefix    = "rng/cpu/rank-" // ranks 1… of a data-parallel run
)

// Position is where a run stands: Step optimiser steps done; the next batch is batch Batch of epoch Epoch.
type Position struct {
	Step  int64 `json:"step"`
	Epoch int   `json:"epoch"`
	Batch int   `json:"batch"`
}

type checkpointMeta struct {
	Format     string         `json:"format"`
	Experiment string         `json:"experiment"` // the experiment's digest: resuming another experiment is refused
	Position   Position       `json:"position"`
	Optimizer  map[string]any `json:"optimizer"`
	World      int            `json:"world,omitempty"` // the number of ranks that wrote it; 0 means 1
}

type checkpoint struct {
	meta   checkpointMeta
	params map[string]safetensors.Tensor
	optim  []safetensors.Tensor
	obj    map[string]safetensors.Tensor // the objective's state (objectives.Stateful), by its own names
	rngCPU []byte
	// rngRanks are ranks 1… CPU generator states in a data-parallel run (rank 0's is rngCPU).
	rngRanks [][]byte
	path     string
}

func checkpointDir(out string) string { return filepath.Join(out, "checkpoints") }

func checkpointPath(out string, step int64) string {
	return filepath.Join(checkpointDir(out), fmt.Sprintf("step-%09d.safetensors", step))
}

func writeCheckpoint(path string, c *checkpoint) error {
	meta, err := json.Marshal(c.meta)
	if err != nil {
		return err
	}
	var tensors []safetensors.Tensor
	for name, t := range c.params {
		t.Name = paramPrefix + name
		tensors = append(tensors, t)
	}
	for _, t := range c.optim {
		t.Name = optimPrefix + t.Name
		tensors = append(tensors, t)
	}
	for name, t := range c.obj {
		t.Name = objectivePrefix + name
		tensors = append(tensors, t)
	}
	tensors = append(tensors, safetensors.Tensor{Name: rngKey, DType: "U8", Shape: []int64{int64(len(c.rngCPU))}, Data: c.rngCPU})
	for i, st := range c.rngRanks {
		tensors = append(tensors, safetensors.Tensor{Name: fmt.Sprintf("%s%d", rngRankPrefix, i+1), DType: "U8", Shape: []int64{int64(len(st))}, Data: st})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return safetensors.WriteFile(path, map[string]string{"convrep": string(meta)}, tensors)
}

func readCheckpoint(path string) (*checkpoint, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	c := &checkpoint{params: map[string]safetensors.Tensor{}, obj: map[string]safetensors.Tensor{}, path: path}
	raw, ok := f.Metadata["convrep"]
	if !ok {
		return nil, fmt.Errorf("checkpoint %s: no convrep metadata; not a checkpoint convrep wrote", path)
	}
	if err := json.Unmarshal([]byte(raw), &c.meta); err != nil {
		return nil, fmt.Errorf("checkpoint %s: metadata: %w", path, err)
	}
	if c.meta.Format != checkpointFormat {
		return nil, fmt.Errorf("checkpoint %s: format %q, this convrep reads %q", path, c.meta.Format, checkpointFormat)
	}
	for _, t := range f.Tensors {
		switch {
		case strings.HasPrefix(t.Name, paramPrefix):
			c.params[strings.TrimPrefix(t.Name, paramPrefix)] = t
		case strings.HasPrefix(t.Name, optimPrefix):
			t.Name = strings.TrimPrefix(t.Name, optimPrefix)
			c.optim = append(c.optim, t)
		case strings.HasPrefix(t.Name, objectivePrefix):
			c.obj[strings.TrimPrefix(t.Name, objectivePrefix)] = t
		case t.Name == rngKey:
			c.rngCPU = t.Data
		case strings.HasPrefix(t.Name, rngRankPrefix):
			r, err := strconv.Atoi(strings.TrimPrefix(t.Name, rngRankPrefix))
			if err != nil || r < 1 || r > 1<<16 {
				return nil, fmt.Errorf("checkpoint %s: tensor %s names no rank", path, t.Name)
			}
			for len(c.rngRanks) < r {
				c.rngRanks = append(c.rngRanks, nil)
			}
			c.rngRanks[r-1] = t.Data
		default:
			return nil, fmt.Errorf("checkpoint %s: unexpected tensor %s", path, t.Name)
		}
	}
	if len(c.rngCPU) == 0 {
		return nil, fmt.Errorf("checkpoint %s: no RNG state", path)
	}
	return c, nil
}

// checkpoints lists a run's checkpoint files, oldest first.
func checkpoints(out string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(checkpointDir(out), "step-*.safetensors"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths) // zero-padded step numbers sort in step order
	return paths, nil
}

// prune removes all but the newest keep checkpoints, and the temporary files of writes a killed run left.
func prune(out string, keep int) error {
	torn, err := filepath.Glob(filepath.Join(checkpointDir(out), ".step-*.tmp-*"))
	if err != nil {
		return err
	}
	for _, p := range torn {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	paths, err := checkpoints(out)
	if err != nil {
		return err
	}
	for len(paths) > keep {
		if err := os.Remove(paths[0]); err != nil {
			return err
		}
		paths = paths[1:]
	}
	return nil
}
