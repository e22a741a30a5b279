// Package checkpoint is the on-disk format of a training run's checkpoints: one safetensors file per step,
// written atomically, read back whole. Where they lie in a run folder, and their names, are package rundir's.
package checkpoint

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"convrep/safetensors"
)

// A checkpoint is one safetensors file holding everything a run needs to continue exactly: every trainable
// tensor ("param/<name>"), the optimiser's moments ("optim/<name>..."), the objective's own state when it
// has one ("objective/<name>", such as FutureTOD's teacher), each rank's libtorch generator states (bytes:
// "rng/cpu" and, on a GPU, "rng/cuda" for rank 0; "rng/cpu/rank-<r>" and "rng/cuda/rank-<r>" for ranks 1…),
// and, as JSON in the metadata, the position in the data and the optimiser's scalars. Checkpoints written
// before the CUDA states existed hold only the CPU names and read as runs on the CPU.
// It is written atomically (temporary file, fsync, rename), so a run killed at any moment leaves the
// previous checkpoint or the new one, never a torn file; a sha256 of the tensors in the metadata catches a
// file damaged later (a bad disk, a bad copy). Checkpoints from before the checksum are read unchecked.

const (
	// FormatName is what Meta.Format holds for the files this package writes and reads.
	FormatName = "convrep-checkpoint-1"
	// ParamPrefix and ObjectivePrefix start the names of the parameters and the objective's state.
	ParamPrefix     = "param/"
	optimPrefix     = "optim/"
	ObjectivePrefix = "objective/"
	rngPrefix       = "rng/"
	// RNGCPU and RNGCUDA name a rank's generators: the CPU's, and that of the GPU the rank trained on.
	RNGCPU  = "cpu"
	RNGCUDA = "cuda"
	// maxRanks bounds the rank a tensor's name may give, so a crafted name cannot make Read allocate much.
	maxRanks = 1 << 16
)

// Position is where a run stands: Step optimiser steps done; the next batch is batch Batch of epoch Epoch.
type Position struct {
	Step  int64 `json:"step"`
	Epoch int   `json:"epoch"`
	Batch int   `json:"batch"`
}

// check refuses a position no run reaches: a negative count would index before the data.
func (p Position) check() error {
	if p.Step < 0 || p.Epoch < 0 || p.Batch < 0 {
		return fmt.Errorf("position step %d, epoch %d, batch %d: none may be negative", p.Step, p.Epoch, p.Batch)
	}
	return nil
}

// Window is the part of a metrics line's averaging window that a run had covered when it checkpointed:
// the losses of the steps since the last line. A resumed run starts its window from it, so its first line
// averages the same steps as an uninterrupted run's.
type Window struct {
	LossSum float64 `json:"loss_sum"`
	Steps   int64   `json:"steps"`
	// Objective sums each of the objective's metrics over the window's micro-batches, ObjectiveCount says
	// how many reported it (both absent from checkpoints written before they were kept).
	Objective      map[string]float64 `json:"objective,omitempty"`
	ObjectiveCount map[string]int64   `json:"objective_count,omitempty"`
}

// Valid is the state of a run's validation at a checkpoint.
type Valid struct {
	BestStep int64   `json:"best_step"` // the step of the lowest validation loss so far (0: none yet)
	BestLoss float64 `json:"best_loss"`
	Since    int64   `json:"since"`   // evaluations since the best one that did not improve on it
	Stopped  bool    `json:"stopped"` // the run stopped early here: a resume goes straight to the end
}

func (w *Window) check(pos Position) error {
	if w == nil {
		return nil
	}
	if w.Steps < 0 || w.Steps > pos.Step || math.IsNaN(w.LossSum) || math.IsInf(w.LossSum, 0) {
		return fmt.Errorf("metrics window of %d steps summing to %v at step %d: want 0 to %d steps and a finite sum",
			w.Steps, w.LossSum, pos.Step, pos.Step)
	}
	if len(w.Objective) != len(w.ObjectiveCount) {
		return fmt.Errorf("metrics window: %d objective sums but %d counts", len(w.Objective), len(w.ObjectiveCount))
	}
	for name, s := range w.Objective {
		if n, ok := w.ObjectiveCount[name]; !ok || n < 1 || math.IsNaN(s) || math.IsInf(s, 0) {
			return fmt.Errorf("metrics window: objective metric %q sums to %v over %d micro-batches: want a finite sum over at least one", name, s, n)
		}
	}
	return nil
}

// Meta is a checkpoint's JSON metadata.
type Meta struct {
	Format     string         `json:"format"`
	Experiment string         `json:"experiment"` // the experiment's digest: resuming another experiment is refused
	Position   Position       `json:"position"`
	Optimizer  map[string]any `json:"optimizer"`
	World      int            `json:"world,omitempty"` // the number of ranks that wrote it; 0 means 1
	Window     *Window        `json:"window,omitempty"`
	// Valid is where validation stood (train.valid_share > 0): the best evaluation so far and the
	// evaluations since, so that a resumed run keeps the same best model and stops early at the same step.
	Valid *Valid `json:"valid,omitempty"`
	// Checksum is "sha256:<hex>" of every tensor's name, dtype, shape and data (see Checksum); Write sets it.
	// Checkpoints written before it existed have none and are read unchecked (File.Unchecked).
	Checksum string `json:"checksum,omitempty"`
}

// File is a checkpoint's content; Write writes Meta.Format as given.
type File struct {
	Meta      Meta
	Params    map[string]safetensors.Tensor
	Optim     []safetensors.Tensor
	Objective map[string]safetensors.Tensor // the objective's state (objectives.Stateful), by its own names
	// RNG holds each rank's generator states, indexed by rank: rank 0's CPU state is always there; a GPU
	// run's ranks have their CUDA state too; ranks 1… appear in data-parallel runs.
	RNG  []RankRNG
	Path string
	// Unchecked is set by Read for a checkpoint without a checksum, written before checksums existed.
	Unchecked bool
}

// RankRNG is one rank's libtorch generator states (torch.get_rng_state, torch.cuda.get_rng_state); nil for
// a device the rank did not use.
type RankRNG struct {
	CPU, CUDA []byte
}

// device is the state of the generator kind names (RNGCPU or RNGCUDA).
func (r *RankRNG) device(kind string) *[]byte {
	if kind == RNGCUDA {
		return &r.CUDA
	}
	return &r.CPU
}

// rngName is the tensor name of rank's state of the kind of generator: rank 0's names carry no rank, as
// before data-parallel runs existed.
func rngName(kind string, rank int) string {
	if rank == 0 {
		return rngPrefix + kind
	}
	return fmt.Sprintf("%s%s/rank-%d", rngPrefix, kind, rank)
}

// parseRNGName is rngName's inverse; ok is false for a name it never writes.
func parseRNGName(name string) (kind string, rank int, ok bool) {
	rest, found := strings.CutPrefix(name, rngPrefix)
	if !found {
		return "", 0, false
	}
	kind, r, hasRank := strings.Cut(rest, "/rank-")
	if kind != RNGCPU && kind != RNGCUDA {
		return "", 0, false
	}
	if !hasRank {
		return kind, 0, true
	}
	n, err := strconv.Atoi(r)
	if err != nil || n < 1 || n >= maxRanks || strconv.Itoa(n) != r {
		return "", 0, false
	}
	return kind, n, true
}

// Write writes c to path atomically.
func Write(path string, c *File) error {
	var tensors []safetensors.Tensor
	for name, t := range c.Params {
		t.Name = ParamPrefix + name
		tensors = append(tensors, t)
	}
	for _, t := range c.Optim {
		t.Name = optimPrefix + t.Name
		tensors = append(tensors, t)
	}
	for name, t := range c.Objective {
		t.Name = ObjectivePrefix + name
		tensors = append(tensors, t)
	}
	if len(c.RNG) == 0 || len(c.RNG[0].CPU) == 0 {
		return fmt.Errorf("checkpoint %s: no CPU RNG state for rank 0", path)
	}
	for r, st := range c.RNG {
		for _, kind := range []string{RNGCPU, RNGCUDA} {
			if b := *st.device(kind); b != nil {
				tensors = append(tensors, safetensors.Tensor{Name: rngName(kind, r), DType: "U8", Shape: []int64{int64(len(b))}, Data: b})
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	m := c.Meta
	m.Checksum = Checksum(tensors)
	meta, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return safetensors.WriteFile(path, map[string]string{"convrep": string(meta)}, tensors)
}

// Checksum is the sha256 of tensors taken in name order: for each its name, dtype, shape and data, each
// preceded by its length, so that no two different sets of tensors are hashed from the same bytes.
func Checksum(tensors []safetensors.Tensor) string {
	sorted := slices.SortedFunc(slices.Values(tensors), func(a, b safetensors.Tensor) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	field := func(b []byte) {
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	for _, t := range sorted {
		field([]byte(t.Name))
		field([]byte(t.DType))
		var shape []byte
		for _, d := range t.Shape {
			shape = binary.LittleEndian.AppendUint64(shape, uint64(d))
		}
		field(shape)
		field(t.Data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Read reads and checks a whole checkpoint.
func Read(path string) (*File, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	c := &File{Params: map[string]safetensors.Tensor{}, Objective: map[string]safetensors.Tensor{}, Path: path}
	raw, ok := f.Metadata["convrep"]
	if !ok {
		return nil, fmt.Errorf("checkpoint %s: no convrep metadata; not a checkpoint convrep wrote", path)
	}
	if err := json.Unmarshal([]byte(raw), &c.Meta); err != nil {
		return nil, fmt.Errorf("checkpoint %s: metadata: %w", path, err)
	}
	if c.Meta.Format != FormatName {
		return nil, fmt.Errorf("checkpoint %s: format %q, this convrep reads %q", path, c.Meta.Format, FormatName)
	}
	if err := c.Meta.Position.check(); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err := c.Meta.Window.check(c.Meta.Position); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if c.Meta.Checksum == "" {
		c.Unchecked = true
	} else if got := Checksum(f.Tensors); got != c.Meta.Checksum {
		return nil, fmt.Errorf("checkpoint %s: tensor data does not match its checksum (metadata %s, data %s): the file was damaged after it was written",
			path, c.Meta.Checksum, got)
	}
	for _, t := range f.Tensors {
		switch {
		case strings.HasPrefix(t.Name, ParamPrefix):
			c.Params[strings.TrimPrefix(t.Name, ParamPrefix)] = t
		case strings.HasPrefix(t.Name, optimPrefix):
			t.Name = strings.TrimPrefix(t.Name, optimPrefix)
			c.Optim = append(c.Optim, t)
		case strings.HasPrefix(t.Name, ObjectivePrefix):
			c.Objective[strings.TrimPrefix(t.Name, ObjectivePrefix)] = t
		case strings.HasPrefix(t.Name, rngPrefix):
			kind, r, ok := parseRNGName(t.Name)
			if !ok {
				return nil, fmt.Errorf("checkpoint %s: tensor %s names no generator of a rank (rng/cpu, rng/cuda, rng/<kind>/rank-<r>)", path, t.Name)
			}
			if world := max(c.Meta.World, 1); r >= world {
				return nil, fmt.Errorf("checkpoint %s: tensor %s is of rank %d, but %d ranks wrote the checkpoint", path, t.Name, r, world)
			}
			if t.DType != "U8" || len(t.Data) == 0 {
				return nil, fmt.Errorf("checkpoint %s: tensor %s is %d bytes of %s, want a non-empty U8 state", path, t.Name, len(t.Data), t.DType)
			}
			for len(c.RNG) <= r {
				c.RNG = append(c.RNG, RankRNG{})
			}
			*c.RNG[r].device(kind) = t.Data
		default:
			return nil, fmt.Errorf("checkpoint %s: unexpected tensor %s", path, t.Name)
		}
	}
	if len(c.RNG) == 0 || c.RNG[0].CPU == nil {
		return nil, fmt.Errorf("checkpoint %s: no RNG state (%s)", path, rngName(RNGCPU, 0))
	}
	return c, nil
}
