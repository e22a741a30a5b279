package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"convrep/safetensors"
)

// A run folder (a training run's output_dir) holds:
//
//	model/                         the trained encoder and its tokenizer, HuggingFace layout (written at the end)
//	checkpoints/step-N.safetensors one checkpoint per kept step, N zero-padded to 9 digits (package checkpoint's format)
//	metrics.jsonl                  one JSON line per log_every steps
//	loss.png                       the loss curve
//	events.out.tfevents.*          TensorBoard's event file (train.tensorboard; package tensorboard finds it)
//	README.md                      what is where, and the commands that resume, evaluate and embed with it
//	.convrep.lock                  the folder's lock (Acquire)
//
// Every reader and writer of that layout goes through Run, so the names are spelled here only.

const (
	modelName       = "model"
	checkpointsName = "checkpoints"
	// MetricsName, LossPlotName and ReadmeName are the names of those files in a run folder.
	MetricsName  = "metrics.jsonl"
	LossPlotName = "loss.png"
	ReadmeName   = "README.md"
)

// Run is a training run's output folder. Its methods name the places in it; none touches the disk but
// Checkpoints, Newest and Prune.
type Run struct {
	dir string
}

// At is the run whose output folder is dir, whether or not it exists yet (a run about to start).
func At(dir string) Run { return Run{dir: dir} }

// Open is the finished run in dir: one whose model folder holds a config.json. The error says what is missing.
func Open(dir string) (Run, error) {
	r := At(dir)
	if _, err := os.Stat(filepath.Join(r.ModelDir(), "config.json")); err != nil {
		return Run{}, err
	}
	return r, nil
}

// IsRun reports whether dir is a finished run's folder (Open succeeds).
func IsRun(dir string) bool {
	_, err := Open(dir)
	return err == nil
}

// Dir is the run's output folder.
func (r Run) Dir() string { return r.dir }

// ModelDir is the folder of the run's trained model (HuggingFace layout, with its tokenizer).
func (r Run) ModelDir() string { return filepath.Join(r.dir, modelName) }

// CheckpointDir is the folder of the run's checkpoints.
func (r Run) CheckpointDir() string { return filepath.Join(r.dir, checkpointsName) }

// CheckpointPath is the file of the checkpoint after step optimiser steps.
func (r Run) CheckpointPath(step int64) string {
	return filepath.Join(r.CheckpointDir(), fmt.Sprintf("step-%09d.safetensors", step))
}

// MetricsPath is the run's metrics.jsonl.
func (r Run) MetricsPath() string { return filepath.Join(r.dir, MetricsName) }

// LossPlotPath is the run's loss curve.
func (r Run) LossPlotPath() string { return filepath.Join(r.dir, LossPlotName) }

// ReadmePath is the run folder's guide.
func (r Run) ReadmePath() string { return filepath.Join(r.dir, ReadmeName) }

// Checkpoints lists the run's checkpoint files, oldest first; none is no error.
func (r Run) Checkpoints() ([]string, error) { return CheckpointsIn(r.CheckpointDir()) }

// Newest is the run's newest checkpoint; it is an error when the run has none.
func (r Run) Newest() (string, error) {
	paths, err := r.Checkpoints()
	if err != nil {
		return "", err
	}
	if len(paths) == 0 {
		return "", fmt.Errorf("%s: no checkpoints (step-N.safetensors) in %s", r.dir, r.CheckpointDir())
	}
	return paths[len(paths)-1], nil
}

// Prune removes all but the newest keep checkpoints, and the temporary files of writes a killed run left.
func (r Run) Prune(keep int) error {
	torn, err := filepath.Glob(filepath.Join(r.CheckpointDir(), ".step-*.tmp-*"))
	if err != nil {
		return err
	}
	for _, p := range torn {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	paths, err := r.Checkpoints()
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

// CheckpointsIn lists the checkpoint files (step-N.safetensors) in dir, a run's checkpoints folder or any
// folder of them, oldest first.
func CheckpointsIn(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "step-*.safetensors"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths) // zero-padded step numbers sort in step order
	return paths, nil
}

// stepName is a checkpoint's file name as CheckpointPath writes it.
var stepName = regexp.MustCompile(`^step-([0-9]{1,18})\.safetensors$`)

// StepOf is the step of a checkpoint file, read from its name (step-N.safetensors); ok is false for a file
// not named so.
func StepOf(path string) (step int64, ok bool) {
	m := stepName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	return n, err == nil
}

// IsCheckpointOf reports whether path is a file in the run's checkpoints folder (compared as absolute paths).
func (r Run) IsCheckpointOf(path string) (bool, error) {
	want, err := filepath.Abs(r.CheckpointDir())
	if err != nil {
		return false, err
	}
	got, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return false, err
	}
	return got == want, nil
}

// Weights reads every tensor of a checkpoint file by its name in the file (the parameters are under
// checkpoint.ParamPrefix): the one loader of a model's weights at a checkpoint, whatever part of them the
// caller builds (an encoder, a second encoder, a head). It reads the file as it is, without the format's
// checks (checkpoint.Read checks them, for resuming).
func Weights(path string) (map[string]safetensors.Tensor, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]safetensors.Tensor, len(f.Tensors))
	for _, t := range f.Tensors {
		byName[t.Name] = t
	}
	return byName, nil
}
