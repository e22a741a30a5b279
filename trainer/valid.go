package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
	"go.uber.org/zap"

	"convrep/checkpoint"
	"convrep/datasets"
	"convrep/experiment"
	"convrep/internal/atomicfile"
	"convrep/internal/torch"
	"convrep/objectives"
)

// Validation during pretraining (train.valid_share, eval_every, early_stopping_patience): a seeded share of
// the dialogues is held out of training (objectives.Holdout), the objective's own Dataset builds examples of
// it, and every eval_every steps the model is measured on them in eval mode under no-grad: the mean of the
// objective's loss, or for an MLM-based objective (objectives.Validator) the masked tokens' mean NLL and its
// exponential, the perplexity (FutureTOD §3.1's early stopping). The best evaluation's model is kept in
// best/ and becomes the run's model/; after early_stopping_patience evaluations without improvement the
// run ends there.

// validFile lists the held-out dialogues in the run folder; a resume checks it against its own split.
const validFile = "valid_dialogues.json"

// bestDir holds the model of the best evaluation, in HuggingFace layout, with bestRecord.
const bestDir = "best"

const bestRecord = "best.json"

// validation is what a run with a held-out share carries.
type validation struct {
	data  objectives.Dataset
	keys  []string         // the held-out dialogues (objectives.DialogueKey), sorted
	state checkpoint.Valid // the best evaluation so far
}

// holdoutEnvs gives the training and validation sides of env's data for the held-out share; each side
// caches its examples in a folder of its own, apart from a run without the split.
func holdoutEnvs(env objectives.DataEnv, share float64, seed int64) (train, valid objectives.DataEnv) {
	base := filepath.Join(env.CacheDir, fmt.Sprintf("holdout-%g-seed%d", share, seed))
	train, valid = env, env
	train.Holdout = &objectives.Holdout{Share: share, Seed: seed}
	valid.Holdout = &objectives.Holdout{Share: share, Seed: seed, Valid: true}
	train.CacheDir, valid.CacheDir = filepath.Join(base, "train"), filepath.Join(base, "valid")
	valid.MaxExamples = 0 // data.max_examples caps the training examples; the held-out share is kept whole
	return train, valid
}

// buildValidation builds the validation examples from the held-out dialogues and notes which they are.
func (t *Trainer) buildValidation(env objectives.DataEnv) error {
	v := &validation{}
	env.Holdout.Seen = func(keys []string) { v.keys = keys }
	var err error
	if v.data, err = t.obj.Dataset(env); err != nil {
		return fmt.Errorf("validation data: %w", err)
	}
	if v.keys == nil { // the objective's cache answered without reading the dialogues: read them for Seen
		if err := env.EachDialogue(func(datasets.Dialogue) error { return nil }); err != nil {
			return fmt.Errorf("validation data: %w", err)
		}
	}
	if a, ok := v.data.(objectives.EpochAware); ok {
		a.SetEpoch(0) // the same masks and splits at every evaluation
	}
	if err := validationFits(t.exp.Train, len(v.keys), v.data.Len()); err != nil {
		return err
	}
	t.valid = v
	t.log.Info("validation", zap.Int("dialogues", len(v.keys)), zap.Int("examples", v.data.Len()))
	return nil
}

// validationFits is the rule a run holds its validation examples to (a dry run too): at least one batch of
// train.batch_size, as an evaluation takes whole batches.
func validationFits(tc experiment.TrainConfig, dialogues, examples int) error {
	if examples < tc.BatchSize {
		return fmt.Errorf("train.valid_share %g: the %d held-out dialogues make %d validation examples, fewer than a batch of %d",
			tc.ValidShare, dialogues, examples, tc.BatchSize)
	}
	return nil
}

// recordValidation writes the held-out dialogues into the run folder, or on a resume checks that the
// folder's list is this split's.
func (t *Trainer) recordValidation(resuming bool) error {
	path := filepath.Join(t.exp.OutputDir, validFile)
	if resuming {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("resume with train.valid_share: %w", err)
		}
		var stored []string
		if err := json.Unmarshal(b, &stored); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if !slices.Equal(stored, t.valid.keys) {
			return fmt.Errorf("%s lists %d held-out dialogues, this run's split %d others: the data or the seed changed since the run began",
				path, len(stored), len(t.valid.keys))
		}
		return nil
	}
	if !t.cl.leader() {
		return nil
	}
	if err := os.MkdirAll(t.exp.OutputDir, 0o755); err != nil {
		return fmt.Errorf("output_dir: %w", err)
	}
	b, err := json.MarshalIndent(t.valid.keys, "", " ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'))
}

// evaluate measures the model on the validation examples: batches of train.batch_size in a fixed order (the
// last partial one left out, whatever train.drop_last says), each rank its share, in eval mode under no-grad.
// It leaves libtorch's generators as it found them, so the run's dropout stream is the same with or without it.
// It reads the device once.
func (t *Trainer) evaluate() (loss float64, err error) {
	_, perplexity := t.obj.(objectives.Validator)
	b := t.exp.Train.BatchSize
	err = keepRNG(t.dev, func() error {
		return torch.Catch("validation", func() error {
			return torch.NoGrad(func() error {
				sum := ts.MustScalarTensor(ts.FloatScalar(0), gotch.Double, t.dev)
				defer sum.MustDrop()
				count := 0.0
				for k := 0; (k+1)*b <= t.valid.data.Len(); k++ {
					idx := make([]int, b)
					for i := range idx {
						idx[i] = k*b + i
					}
					mb, err := t.valid.data.Batch(t.cl.shard(idx), t.dev)
					if err != nil {
						return err
					}
					s, n, err := t.validLoss(mb.Value)
					dropBatches([]objectives.Batch{mb})
					if err != nil {
						return err
					}
					d := s.MustTotype(gotch.Double, true)
					sum.MustAdd_(d)
					d.MustDrop()
					count += float64(n)
				}
				x := ts.MustStack([]*ts.Tensor{sum, ts.MustScalarTensor(ts.FloatScalar(count), gotch.Double, t.dev)}, 0)
				defer x.MustDrop()
				all, err := t.cl.agree(x)
				if err != nil {
					return err
				}
				defer all.MustDrop()
				v, err := torch.Read(all)
				if err != nil {
					return err
				}
				loss = v[0] / v[1]
				return nil
			})
		})
	})
	if err == nil && (math.IsNaN(loss) || math.IsInf(loss, 0)) {
		err = fmt.Errorf("the validation loss is %v", loss)
	}
	if err != nil {
		return 0, fmt.Errorf("step %d: validation: %w", t.pos.Step, err)
	}
	if perplexity {
		t.log.Debug("validation", zap.Int64("step", t.pos.Step), zap.Float64("nll", loss), zap.Float64("ppl", math.Exp(loss)))
	}
	return loss, nil
}

// validLoss is one validation batch's summed measure and what it counts: the objective's own (Validator),
// or its loss as one batch's mean. Under bf16 it runs under autocast, as training does.
func (t *Trainer) validLoss(batch any) (sum *ts.Tensor, n int64, err error) {
	if t.exp.Train.Precision == "bf16" {
		restore, err := torch.Autocast(t.dev, gotch.BFloat16)
		if err != nil {
			return nil, 0, fmt.Errorf("train.precision bf16: %w", err)
		}
		defer restore()
	}
	if v, ok := t.obj.(objectives.Validator); ok {
		return v.ValidationLoss(batch)
	}
	l, m, err := t.obj.Loss(batch, false)
	objectives.DropMetrics(m)
	if err != nil {
		return nil, 0, err
	}
	return l, 1, nil
}

// validate runs an evaluation at an eval_every step, notes it in m and keeps the model when it is the best
// so far. It says whether the run stops early here.
func (t *Trainer) validate(m *Metric) (stop bool, err error) {
	loss, err := t.evaluate()
	if err != nil {
		return false, err
	}
	m.ValidLoss = &loss
	if _, ok := t.obj.(objectives.Validator); ok {
		ppl := math.Exp(loss)
		m.ValidPPL = &ppl
	}
	s := &t.valid.state
	if s.BestStep == 0 || loss < s.BestLoss {
		s.BestStep, s.BestLoss, s.Since = t.pos.Step, loss, 0
		if t.cl.leader() {
			if err := t.saveBest(); err != nil {
				return false, err
			}
		}
	} else {
		s.Since++
	}
	m.BestStep = s.BestStep
	p := t.exp.Train.EarlyStoppingPatience
	if p > 0 && s.Since >= p {
		s.Stopped = true
		t.log.Info("early stopping", zap.Int64("step", t.pos.Step), zap.Int64("evaluations_without_improvement", s.Since),
			zap.Int64("best_step", s.BestStep), zap.Float64("best_valid_loss", s.BestLoss))
		return true, nil
	}
	return false, nil
}

// best is the record beside the best model.
type best struct {
	Step      int64   `json:"step"`
	ValidLoss float64 `json:"valid_loss"`
}

// saveBest writes the model as it is now into best/, whole or not at all.
func (t *Trainer) saveBest() error {
	dir := filepath.Join(t.exp.OutputDir, bestDir)
	rec, err := json.Marshal(best{Step: t.valid.state.BestStep, ValidLoss: t.valid.state.BestLoss})
	if err != nil {
		return err
	}
	err = atomicfile.WriteDir(dir, func(tmp string) error {
		if err := t.writeModel(tmp); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, bestRecord), append(rec, '\n'), 0o644)
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", dir, err)
	}
	t.log.Info("best model", zap.String("path", dir), zap.Int64("step", t.valid.state.BestStep),
		zap.Float64("valid_loss", t.valid.state.BestLoss))
	return nil
}

// writeBestAsModel writes best/'s model as the run's model/ (the best evaluation's weights are the run's
// result, as FutureTOD's early stopping keeps them). best/ must be the one the state names: a crash between
// writing best/ and the next checkpoint is redone by the resumed run, which writes it again at that step.
func (t *Trainer) writeBestAsModel(dir string) error {
	src := filepath.Join(t.exp.OutputDir, bestDir)
	b, err := os.ReadFile(filepath.Join(src, bestRecord))
	if err != nil {
		return fmt.Errorf("the best model: %w", err)
	}
	var rec best
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(src, bestRecord), err)
	}
	if rec.Step != t.valid.state.BestStep {
		return fmt.Errorf("%s holds step %d's model, the run's best is step %d's", src, rec.Step, t.valid.state.BestStep)
	}
	return atomicfile.WriteDir(dir, func(tmp string) error { return copyFiles(src, tmp, bestRecord) })
}

// copyFiles copies the tree under src (folders and plain files) into dst, except src's file skip.
func copyFiles(src, dst, skip string) error {
	return filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." || rel == skip {
			return err
		}
		switch to := filepath.Join(dst, rel); {
		case e.IsDir():
			return os.MkdirAll(to, 0o755)
		case e.Type().IsRegular():
			return copyFile(path, to)
		default:
			return fmt.Errorf("%s is not a plain file or a folder", path)
		}
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

var errEarlyStop = errors.New("early stopping")
