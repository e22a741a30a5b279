package trainer

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
	"go.uber.org/zap"

	"convrep/checkpoint"
	"convrep/internal/torch"
	"convrep/rundir"
	"convrep/safetensors"
)

// saveCheckpoint writes the run's complete state at its current position and keeps the newest few.
// In a data-parallel run every rank calls it (each hands its dropout stream to rank 0) and rank 0 writes.
func (t *Trainer) saveCheckpoint() error {
	rngs, err := t.cl.rngStates(t.dev)
	if err != nil || !t.cl.leader() {
		return err
	}
	c := &checkpoint.File{Meta: checkpoint.Meta{Format: checkpoint.FormatName, Experiment: t.digest, Position: t.pos},
		Params: map[string]safetensors.Tensor{}, Objective: map[string]safetensors.Tensor{}, RNG: rngs}
	if t.cl.multi() {
		c.Meta.World = t.cl.world() // single-process checkpoints leave it out, as they always have
	}
	if t.valid != nil {
		v := t.valid.state
		c.Meta.Valid = &v
	}
	if c.Meta.Window, err = t.win.saved(); err != nil {
		return err
	}
	err = torch.Catch("checkpoint", func() error {
		for name, p := range t.params {
			st, err := torch.ToSafetensor(name, p)
			if err != nil {
				return err
			}
			c.Params[name] = st
		}
		for name, x := range t.objectiveState() {
			st, err := torch.ToSafetensor(name, x)
			if err != nil {
				return fmt.Errorf("objective state: %w", err)
			}
			c.Objective[name] = st
		}
		var err error
		c.Optim, c.Meta.Optimizer, err = t.opt.State()
		return err
	})
	if err != nil {
		return err
	}
	path := rundir.At(t.exp.OutputDir).CheckpointPath(t.pos.Step)
	if err := checkpoint.Write(path, c); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	t.log.Info("checkpoint", zap.String("path", path), zap.Int64("step", t.pos.Step))
	return rundir.At(t.exp.OutputDir).Prune(t.exp.Train.KeepCheckpoints)
}

// storedDType is the dtype torch.ToSafetensor writes a parameter of each kind with.
var storedDType = map[gotch.DType]safetensors.DType{gotch.Float: safetensors.F32, gotch.Double: safetensors.F64, gotch.Int64: safetensors.I64}

// restoreNewestGood restores the newest of paths (oldest first) that loads. One that does not (damaged on
// disk, failing its checksum, of other settings) is passed over with a warning naming the file and the
// problem, and the one before it is tried; when none loads, the error names each file and its problem.
func (t *Trainer) restoreNewestGood(paths []string) error {
	var errs []error
	for i := len(paths) - 1; i >= 0; i-- {
		err := t.restore(paths[i])
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if i > 0 {
			t.log.Warn("checkpoint cannot be resumed; falling back to the previous one",
				zap.String("file", paths[i]), zap.String("problem", err.Error()), zap.String("previous", paths[i-1]))
		}
	}
	return fmt.Errorf("no checkpoint in %s can be resumed:\n%w", filepath.Dir(paths[0]), errors.Join(errs...))
}

// restore loads a checkpoint into the trainer: weights, optimiser, the objective's state, RNG, data position
// and the metrics window.
func (t *Trainer) restore(path string) error {
	c, err := checkpoint.Read(path)
	if err != nil {
		return err
	}
	if c.Meta.Experiment != t.digest {
		return fmt.Errorf("checkpoint %s belongs to another experiment (digest %s, this one %s): the settings changed since it was written",
			path, c.Meta.Experiment, t.digest)
	}
	if b := c.Meta.Position.Batch; int64(b) > t.perEpoch {
		return fmt.Errorf("checkpoint %s: position batch %d is past the %d batches of an epoch: the data changed since it was written",
			path, b, t.perEpoch)
	}
	if c.Unchecked {
		t.log.Warn("checkpoint has no checksum (written before checksums); its tensors are loaded unchecked", zap.String("file", path))
	}
	for name, p := range t.params {
		st, ok := c.Params[name]
		if !ok {
			return fmt.Errorf("checkpoint %s: no tensor for parameter %s", path, name)
		}
		// The copy below would convert another dtype silently; a checkpoint holds its parameters as written.
		if want := storedDType[p.DType()]; st.DType != want {
			return fmt.Errorf("checkpoint %s: tensor %s%s has dtype %s, the parameter is %s", path, checkpoint.ParamPrefix, name, st.DType, want)
		}
	}
	if len(c.Params) != len(t.params) {
		return fmt.Errorf("checkpoint %s holds %d parameters, the model has %d", path, len(c.Params), len(t.params))
	}
	state := t.objectiveState()
	if err := checkObjectiveState(path, c.Objective, state); err != nil {
		return err
	}
	err = torch.Catch("restore "+path, func() error {
		for name, p := range t.params {
			if err := torch.CopyFromSafetensor(p, c.Params[name]); err != nil {
				return fmt.Errorf("checkpoint %s: %w", path, err)
			}
		}
		for name, x := range state {
			if err := torch.CopyFromSafetensor(x, c.Objective[name]); err != nil {
				return fmt.Errorf("checkpoint %s: objective state: %w", path, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := t.opt.LoadState(c.Optim, c.Meta.Optimizer); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err := t.restoreRNG(c); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	switch {
	case t.valid != nil && c.Meta.Valid == nil:
		return fmt.Errorf("checkpoint %s has no validation state, and this run validates (train.valid_share)", path)
	case t.valid != nil:
		t.valid.state = *c.Meta.Valid
	}
	t.pos = c.Meta.Position
	if err := t.win.restore(c.Meta.Window, t.dev); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	t.log.Info("resumed", zap.String("checkpoint", path), zap.Int64("step", t.pos.Step), zap.Int("epoch", t.pos.Epoch))
	return nil
}

// checkObjectiveState wants the stored objective state to hold exactly the objective's tensors, each in the
// dtype it is written with: a checkpoint of another objective, or one that lost its teacher, is refused.
func checkObjectiveState(path string, stored map[string]safetensors.Tensor, live map[string]*ts.Tensor) error {
	for name, x := range live {
		st, ok := stored[name]
		if !ok {
			return fmt.Errorf("checkpoint %s: no tensor %s%s of the objective's state", path, checkpoint.ObjectivePrefix, name)
		}
		if want := storedDType[x.DType()]; st.DType != want {
			return fmt.Errorf("checkpoint %s: tensor %s%s has dtype %s, the objective's is %s", path, checkpoint.ObjectivePrefix, name, st.DType, want)
		}
	}
	for name := range stored {
		if _, ok := live[name]; !ok {
			return fmt.Errorf("checkpoint %s: tensor %s%s is no part of this objective's state", path, checkpoint.ObjectivePrefix, name)
		}
	}
	return nil
}

// The generators a rank's dropout draws from are the CPU's and, on a GPU, that GPU's; each rank has its own
// stream of each. A checkpoint holds every rank's states, and a resumed rank continues its own; a device whose
// state it lacks (a checkpoint of fewer devices, or of another number of ranks) is seeded from the seed and
// the rank, as a fresh run's ranks are.

// rngSet holds the kinds of generator (checkpoint.RNGCPU, RNGCUDA) a resume restored.
type rngSet map[string]bool

// rngDevices are the devices whose generators a run on dev draws from.
func rngDevices(dev gotch.Device) []gotch.Device {
	if dev.IsCuda() {
		return []gotch.Device{gotch.CPU, dev}
	}
	return []gotch.Device{gotch.CPU}
}

// rngKind is the checkpoint's name of dev's generator.
func rngKind(dev gotch.Device) string {
	if dev.IsCuda() {
		return checkpoint.RNGCUDA
	}
	return checkpoint.RNGCPU
}

// ownRNG reads this process's generator states for a run on dev.
func ownRNG(dev gotch.Device) (checkpoint.RankRNG, error) {
	var s checkpoint.RankRNG
	for _, d := range rngDevices(dev) {
		state, err := torch.RNGState(d)
		if err != nil {
			return s, err
		}
		if d.IsCuda() {
			s.CUDA = state
		} else {
			s.CPU = state
		}
	}
	return s, nil
}

// restoreRNG sets this rank's generators to the states c holds for it: rank 0's are always the run's; another
// rank's only when as many ranks wrote c. It notes which it restored; seedRNG seeds the others.
func (t *Trainer) restoreRNG(c *checkpoint.File) error {
	t.restored = rngSet{}
	r := t.cl.rank()
	if r >= len(c.RNG) || (r > 0 && max(c.Meta.World, 1) != t.cl.world()) {
		return nil
	}
	for _, dev := range rngDevices(t.dev) {
		state := c.RNG[r].CPU
		if dev.IsCuda() {
			state = c.RNG[r].CUDA
		}
		if state == nil {
			continue
		}
		if err := torch.SetRNGState(dev, state); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		t.restored[rngKind(dev)] = true
	}
	return nil
}

// seedRNG seeds every generator of this rank that no checkpoint restored from (seed, rank), so that no two
// ranks draw the same dropout masks. A fresh run's rank 0 keeps the stream the backbone's build seeded, as a
// single process always has.
func (t *Trainer) seedRNG() error {
	r := t.cl.rank()
	if r == 0 && t.restored == nil {
		return nil
	}
	seed := uint64(t.exp.Seed) + 1_000_003*uint64(r)
	for _, dev := range rngDevices(t.dev) {
		if t.restored[rngKind(dev)] {
			continue
		}
		if err := torch.SeedRNG(dev, seed); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

// keepRNG runs f and then puts the generators of a run on dev back as it found them.
func keepRNG(dev gotch.Device, f func() error) error {
	saved, err := ownRNG(dev)
	if err != nil {
		return err
	}
	err = f()
	for _, d := range rngDevices(dev) {
		state := saved.CPU
		if d.IsCuda() {
			state = saved.CUDA
		}
		if rerr := torch.SetRNGState(d, state); err == nil && rerr != nil {
			err = rerr
		}
	}
	return err
}
