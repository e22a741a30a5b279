// Package modelref resolves what a command's --model (and --checkpoint) names into a model and its tokenizer,
// the same way for every command (embed, evaluate):
//
//   - an experiment file (.toml): its backbone before training (the untrained baseline, same seed and files),
//     or, with a checkpoint of its run, the weights of that checkpoint (the experiment's digest vouches for them);
//   - a convrep run folder (holding model/config.json): the trained model in it, or, with one of its own
//     checkpoints, the weights of that checkpoint over the run's architecture;
//   - a model folder (HuggingFace layout) or a hub name.
//
// It sits above experiment and rundir (experiment imports models, so models cannot resolve an experiment file).
package modelref

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/checkpoint"
	"convrep/experiment"
	"convrep/internal/settings"
	"convrep/modelcard"
	"convrep/models"
	"convrep/models/hub"
	"convrep/models/sbert"
	"convrep/rundir"
	"convrep/tokenizers"
)

// IsExperiment reports whether ref names an experiment file.
func IsExperiment(ref string) bool { return strings.HasSuffix(ref, ".toml") }

// Check fails at once on a model path that does not exist, before any data are read: ref is --model, ckpt
// --checkpoint ("" for none).
func Check(ref, ckpt string) error {
	if strings.Contains(ref, ",") || strings.Contains(ckpt, ",") {
		return fmt.Errorf("--model %q --checkpoint %q: a list is an ensemble, which only evaluate response takes", ref, ckpt)
	}
	if ckpt != "" {
		if _, err := os.Stat(ckpt); err != nil {
			return missing("--checkpoint", ckpt, err)
		}
		if !IsExperiment(ref) {
			if err := checkRunCheckpoint(ref, ckpt); err != nil {
				return err
			}
		}
	}
	if ref == "" {
		return fmt.Errorf("--model is required (a convrep run folder, a model folder, a hub name, or an experiment .toml for its untrained backbone)")
	}
	if _, err := os.Stat(ref); err != nil && IsLocal(ref) {
		return missing("--model", ref, err)
	}
	return nil
}

// IsLocal reports whether ref names a local path rather than a hub name (org/name): it starts with "." or
// "/", is an experiment file, has more than one "/", or its first element is a folder in the working
// directory (runs/…). A missing local path is then said plainly, never tried on the hub.
func IsLocal(ref string) bool {
	if strings.HasPrefix(ref, ".") || filepath.IsAbs(ref) || IsExperiment(ref) || strings.Count(ref, "/") > 1 {
		return true
	}
	first, _, nested := strings.Cut(ref, "/")
	if !nested {
		return false
	}
	fi, err := os.Stat(first)
	return err == nil && fi.IsDir()
}

// missing is the error for a local path given to flag that cannot be read: "no such folder" (or file, for an
// experiment or a checkpoint) with the nearest existing path when a slip of a few letters explains it.
func missing(flag, ref string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %s: %w", flag, ref, unwrapPath(err))
	}
	what := "no such folder"
	if IsExperiment(ref) || strings.HasSuffix(ref, ".safetensors") {
		what = "no such file"
	}
	if near, ok := nearestPath(ref); ok {
		return fmt.Errorf("%s %s: %s (did you mean %s?)", flag, ref, what, near)
	}
	return fmt.Errorf("%s %s: %s", flag, ref, what)
}

// unwrapPath drops the *fs.PathError around err, whose path the message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// nearestPath finds the existing path closest to ref: the deepest ancestor of ref that exists, the entry of it
// nearest by name to ref's next element (settings.Nearest), and the rest of ref below that entry, when that path
// exists (runs/dse_suport/model gives runs/dse_support/model).
func nearestPath(ref string) (string, bool) {
	clean := filepath.Clean(ref)
	for dir := clean; ; {
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		if fi, err := os.Stat(parent); err == nil && fi.IsDir() {
			entries, err := os.ReadDir(parent)
			if err != nil {
				return "", false
			}
			names := make([]string, 0, len(entries))
			for _, e := range entries {
				names = append(names, e.Name())
			}
			best, ok := settings.Nearest(filepath.Base(dir), names)
			if !ok {
				return "", false
			}
			rest, _ := filepath.Rel(dir, clean)
			near := filepath.Join(parent, best, rest)
			_, err = os.Stat(near)
			return near, err == nil
		}
		dir = parent
	}
}

// checkRunCheckpoint checks that checkpoint, given with a run folder as --model, is one of that run's own
// checkpoints (run/checkpoints/step-N.safetensors): the run folder then vouches for its architecture, as the
// experiment's digest does for an experiment file (experiment.AtCheckpoint).
func checkRunCheckpoint(run, ckpt string) error {
	r, err := rundir.Open(run)
	if err != nil {
		return fmt.Errorf("--checkpoint goes with an experiment file or a finished run folder as --model (the checkpoint's own): %s is neither (%w)", run, err)
	}
	own, err := r.IsCheckpointOf(ckpt)
	if err != nil {
		return fmt.Errorf("--checkpoint %s: %v", ckpt, err)
	}
	if !own {
		return fmt.Errorf("--checkpoint %s is not a checkpoint of the run %s (want a file in %s)", ckpt, run, r.CheckpointDir())
	}
	return nil
}

// Load loads the model that ref (and ckpt, "" for none) name, on dev. name is how results name it; dir is
// the model folder it was read from (a run folder's model/, a hub name's cached folder), "" for an
// experiment's backbone or a checkpoint.
func Load(ctx context.Context, ref, ckpt string, dev gotch.Device, log *zap.Logger) (m *models.Model, tok *tokenizers.Tokenizer, name, dir string, err error) {
	if IsExperiment(ref) {
		e, err := experiment.Load(ref, nil)
		if err != nil {
			return nil, nil, "", "", err
		}
		if ckpt != "" {
			b, err := experiment.AtCheckpoint(ctx, e, ckpt, dev, log)
			if err != nil {
				return nil, nil, "", "", err
			}
			return b.Model, b.Tok, e.Name + " @ " + strings.TrimSuffix(filepath.Base(ckpt), ".safetensors"), "", nil
		}
		b, err := experiment.Untrained(ctx, e, dev, log)
		if err != nil {
			return nil, nil, "", "", err
		}
		return b.Model, b.Tok, e.Name + " (untrained)", "", nil
	}
	if ckpt != "" {
		m, tok, name, err := runAtCheckpoint(ref, ckpt, dev)
		return m, tok, name, "", err
	}
	dir = ModelDir(ref)
	m, dir, err = models.LoadPretrained(ctx, dir, hub.OptionsFromEnv(), models.LoadOptions{Heads: &models.Heads{}, Device: dev, Logger: log})
	if err != nil {
		return nil, nil, "", "", err
	}
	tok, err = tokenizers.Load(dir)
	return m, tok, strings.TrimSuffix(ref, "/"), dir, err
}

// ModelDir is the model folder ref names: a run folder's model/, else ref itself (a model folder or a hub
// name).
func ModelDir(ref string) string {
	if r, err := rundir.Open(ref); err == nil {
		return r.ModelDir() // a convrep run folder
	}
	return ref
}

// runAtCheckpoint loads a run folder's model as it was at one of its checkpoints: the architecture and
// tokenizer of run/model, the weights of the checkpoint's param/ tensors (as the trainer wrote them). This is
// how a run whose experiment file was changed by --set (MGT's granularities, the seed members) is evaluated at
// a checkpoint other than its last.
func runAtCheckpoint(run, ckpt string, dev gotch.Device) (*models.Model, *tokenizers.Tokenizer, string, error) {
	dir := rundir.At(run).ModelDir()
	cfg, err := models.ReadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, "", err
	}
	sd, err := rundir.Weights(ckpt)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--checkpoint: %w", err)
	}
	model, err := models.New(cfg, models.Heads{}, dev)
	if err != nil {
		return nil, nil, "", err
	}
	if err := model.LoadTensors(sd, checkpoint.ParamPrefix); err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", ckpt, err)
	}
	tok, err := tokenizers.Load(dir)
	if err != nil {
		return nil, nil, "", err
	}
	return model, tok, strings.TrimSuffix(run, "/") + " @ " + strings.TrimSuffix(filepath.Base(ckpt), ".safetensors"), nil
}

// Name is how a model is named in results: its --model, and the checkpoint's file name when there is one.
func Name(ref, ckpt string) string {
	if ckpt == "" {
		return strings.TrimSuffix(ref, "/")
	}
	return strings.TrimSuffix(ref, "/") + " @ " + strings.TrimSuffix(filepath.Base(ckpt), ".safetensors")
}

// Layout is the sentence-transformers layout a model folder (or a run folder's model/) declares.
func Layout(ref string) (sbert.Layout, bool) {
	for _, dir := range []string{rundir.At(ref).ModelDir(), ref} {
		if l, err := sbert.Read(dir); err == nil {
			return l, true
		}
	}
	return sbert.Layout{}, false
}

// Pooling is the pooling a model folder (or a run folder's model/) declares for sentence-transformers, and
// mean, as DSE evaluates, for anything else (an experiment's untrained backbone, a hub name, a plain
// HuggingFace folder).
func Pooling(ref string) models.Pooling {
	if l, ok := Layout(ref); ok {
		return l.Pooling
	}
	return models.Mean
}

// Step is the training step of the model ref and ckpt name: a checkpoint's step, 0 for an experiment's
// untrained backbone, the steps of a convrep model card (in a run folder's model/ or the folder itself),
// else 0.
func Step(ref, ckpt string) int64 {
	if ckpt != "" {
		n, _ := rundir.StepOf(ckpt)
		return n
	}
	if IsExperiment(ref) {
		return 0
	}
	for _, dir := range []string{rundir.At(ref).ModelDir(), ref} {
		if n, ok := modelcard.Steps(dir); ok {
			return n
		}
	}
	return 0
}
