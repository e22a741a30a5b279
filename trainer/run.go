package trainer

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
	"go.uber.org/zap"

	"convrep/checkpoint"
	"convrep/datasets"
	"convrep/internal/atomicfile"
	"convrep/internal/progress"
	"convrep/internal/torch"
	"convrep/trainer/optim"
)

// Run trains until the last step, then writes the final checkpoint, the model in HuggingFace layout and the
// loss curve. On ctx's cancellation (SIGINT, SIGTERM) it finishes the current step, checkpoints and returns
// ErrStopped.
func (t *Trainer) Run(ctx context.Context, opt Options) error {
	// libtorch's grad mode and error state are per OS thread: the whole run stays on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e := t.exp
	if err := os.MkdirAll(e.OutputDir, 0o755); err != nil {
		return fmt.Errorf("output_dir: %w", err)
	}
	defer t.cl.close()
	// Rank 0 alone logs, writes metrics and draws the progress bar; every rank trains.
	metrics := discardMetrics()
	if t.cl.leader() {
		m, err := openMetrics(e.OutputDir, t.pos.Step)
		if err != nil {
			return err
		}
		metrics = m
		if err := t.describeRun(false); err != nil {
			return fmt.Errorf("describe the run: %w", err)
		}
	}
	defer metrics.close()
	bar := progress.New(nil, "", "", 0, 0)
	if opt.Progress != nil && t.cl.leader() {
		bar = progress.New(opt.Progress, "training", "steps", t.total, t.pos.Step)
	}
	defer bar.Finish()
	t.log.Info("training", zap.String("experiment", e.Name), zap.Int("examples", t.data.Len()), zap.Int64("steps", t.total),
		zap.Int64("from_step", t.pos.Step), zap.String("output", e.OutputDir), zap.Int("ranks", t.cl.world()))

	micro := e.Train.BatchSize
	perStep := micro * e.Train.GradAccumulation
	perEpoch := t.data.Len() / perStep
	start := time.Now()
	stopping := false // every rank agreed to stop after the step just taken
	for t.pos.Step < t.total {
		order := datasets.Order(t.data.Len(), e.Seed, t.pos.Epoch)
		t.enterEpoch(t.pos.Epoch)
		for t.pos.Batch < perEpoch && t.pos.Step < t.total {
			if stopping || (!t.cl.multi() && ctx.Err() != nil) {
				if err := t.syncAndCheckpoint(metrics); err != nil {
					return err
				}
				t.log.Info("stopped by signal", zap.Int64("step", t.pos.Step))
				return ErrStopped
			}
			idx := order[t.pos.Batch*perStep : (t.pos.Batch+1)*perStep]
			stepStart := time.Now()
			loss, norm, err := t.step(idx, micro)
			if err == nil {
				loss, stopping, err = t.cl.agree(loss, ctx.Err() != nil)
			}
			if err != nil {
				return fmt.Errorf("step %d: %w", t.pos.Step+1, err)
			}
			// The position moves past the batch before the checkpoint below records it: a resume starts
			// with the next batch, not this one again.
			t.pos.Step, t.pos.Batch = t.pos.Step+1, t.pos.Batch+1
			if err := t.afterStep(perEpoch); err != nil {
				return fmt.Errorf("step %d: %w", t.pos.Step, err)
			}
			t.window.add(loss, perStep, time.Since(stepStart))
			bar.Describe(fmt.Sprintf("loss %.4f", loss))
			bar.Add(1)
			if t.pos.Step%e.Train.LogEvery == 0 || t.pos.Step == t.total {
				objMetrics, err := t.objm.mean()
				if err != nil {
					return fmt.Errorf("step %d: %w", t.pos.Step, err)
				}
				m := t.window.metric(t.pos, t.opt, norm, objMetrics, time.Since(start))
				if err := metrics.write(m); err != nil {
					return err
				}
				t.lastLoss = m.Loss
				t.log.Debug("step", zap.Int64("step", m.Step), zap.Float64("loss", m.Loss), zap.Float64("pairs_per_s", m.PairsPerS))
				t.window = lossWindow{}
			}
			if t.pos.Step%e.Train.CheckpointEvery == 0 && t.pos.Step < t.total {
				if err := t.syncAndCheckpoint(metrics); err != nil {
					return err
				}
			}
		}
		if t.pos.Batch >= perEpoch {
			t.pos.Epoch, t.pos.Batch = t.pos.Epoch+1, 0
		}
	}
	bar.Finish()
	if err := t.syncAndCheckpoint(metrics); err != nil {
		return err
	}
	if !t.cl.leader() {
		return nil
	}
	return t.finish()
}

// step is one optimiser step: for each micro-batch, forward and loss, backward (gradients accumulate); then
// clipping, the learning rates of the schedule, the optimiser step and zeroed gradients. A NaN or infinite
// loss or gradient norm stops the run before the step changes any weight.
func (t *Trainer) step(idx []int, micro int) (loss, norm float64, err error) {
	err = torch.Catch("train step", func() error {
		parts := len(idx) / micro
		for k := 0; k < parts; k++ {
			b, err := t.data.Batch(t.cl.shard(idx[k*micro:(k+1)*micro]), t.dev)
			if err != nil {
				return err
			}
			l, m, err := t.loss(b.Value)
			if err != nil {
				b.Drop()
				return err
			}
			t.objm.add(m) // summed on the device, read once per metrics line (objmetrics.go)
			// Read the value through a detached tensor: the float64 copy Float64Values makes would otherwise
			// keep the step's graph alive until the garbage collector frees it.
			d := l.MustDetach(false)
			v := d.Float64Values()[0]
			d.MustDrop()
			if math.IsNaN(v) || math.IsInf(v, 0) {
				l.MustDrop()
				b.Drop()
				return fmt.Errorf("loss is %v; the run stops here and keeps its last good checkpoint", v)
			}
			scaled := l.MustDivScalar(ts.FloatScalar(float64(parts)), false)
			if k == parts-1 {
				t.cl.arm() // the ranks average the accumulated gradients during this last backward pass
			}
			err = scaled.Backward()
			torch.Drop(scaled, l)
			b.Drop()
			if err != nil {
				return err
			}
			loss += v / float64(parts)
		}
		var all []*ts.Tensor
		for _, g := range t.groups {
			all = append(all, g.Params...)
		}
		if err := t.cl.finish(); err != nil {
			return err
		}
		// The norm is measured even without clipping (a bound no finite norm reaches leaves the gradients
		// as they are): a finite loss can still have a NaN gradient, which would turn every weight NaN.
		maxNorm := t.exp.Train.MaxGradNorm
		if maxNorm == 0 {
			maxNorm = math.MaxFloat32
		}
		if norm, err = optim.ClipGradNorm(all, maxNorm); err != nil {
			return err
		}
		if math.IsNaN(norm) || math.IsInf(norm, 0) {
			return fmt.Errorf("gradient norm is %v; the run stops here and keeps its last good checkpoint", norm)
		}
		f := t.sched.Factor(t.pos.Step)
		for i, g := range t.groups {
			t.opt.SetLR(i, g.LR*f)
		}
		if err := t.opt.Step(); err != nil {
			return err
		}
		return t.opt.ZeroGrad()
	})
	return loss, norm, err
}

// loss runs the forward pass and the objective, under bf16 autocast when train.precision asks for it (the
// backward pass runs outside, as autocast wants). Run holds the OS thread autocast's state lives on.
func (t *Trainer) loss(batch any) (l *ts.Tensor, m map[string]*ts.Tensor, err error) {
	if t.exp.Train.Precision != "bf16" {
		return t.obj.Loss(batch, true)
	}
	restore, err := torch.Autocast(t.dev, gotch.BFloat16)
	if err != nil {
		return nil, nil, fmt.Errorf("train.precision bf16: %w", err)
	}
	defer restore()
	return t.obj.Loss(batch, true)
}

// syncAndCheckpoint makes the metrics lines written so far durable, then writes the checkpoint: after a
// crash, the metrics reach at least the newest checkpoint's step.
func (t *Trainer) syncAndCheckpoint(metrics *metricsLog) error {
	if err := metrics.sync(); err != nil {
		return err
	}
	return t.saveCheckpoint()
}

// lossWindow accumulates the steps between two metrics lines. Its losses go into checkpoints, so that the
// first line after a resume averages the same steps as an uninterrupted run's; the timings are of this
// process's steps only.
type lossWindow struct {
	loss     checkpoint.Window
	timed    int // steps timed by this process
	examples int
	busy     time.Duration
}

func (w *lossWindow) add(loss float64, examples int, d time.Duration) {
	w.loss.LossSum += loss
	w.loss.Steps++
	w.timed++
	w.examples += examples
	w.busy += d
}

func (w *lossWindow) metric(pos checkpoint.Position, opt *optim.Optimizer, norm float64, obj map[string]float64, elapsed time.Duration) Metric {
	m := Metric{Step: pos.Step, Epoch: pos.Epoch, Loss: w.loss.LossSum / float64(w.loss.Steps), LR: opt.LR(0), GradNorm: norm,
		PairsPerS: float64(w.examples) / w.busy.Seconds(), StepS: w.busy.Seconds() / float64(w.timed),
		ElapsedS: elapsed.Seconds(), Objective: obj}
	if opt.NumGroups() > 1 {
		m.HeadLR = opt.LR(1)
	}
	return m
}

// finish saves the trained encoder with its tokenizer in HuggingFace layout and draws the loss curve. The
// model folder is written whole beside its place and then put there, so that a crash leaves the previous
// model/ or the new one, never weights of one run with the tokenizer of another.
func (t *Trainer) finish() error {
	dir := filepath.Join(t.exp.OutputDir, "model")
	err := atomicfile.WriteDir(dir, func(tmp string) error {
		if err := t.bb.Model.Save(tmp); err != nil {
			return fmt.Errorf("save model: %w", err)
		}
		if err := t.bb.Tok.Save(tmp); err != nil {
			return fmt.Errorf("save tokenizer: %w", err)
		}
		if err := t.describeModel(tmp); err != nil {
			return fmt.Errorf("describe the model: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", dir, err)
	}
	if err := t.describeRun(true); err != nil {
		return fmt.Errorf("describe the run: %w", err)
	}
	plotPath, err := plotLoss(t.exp.OutputDir, t.exp.Name)
	if err != nil {
		t.log.Warn("no loss curve", zap.Error(err))
	}
	t.log.Info("done", zap.String("model", dir), zap.String("metrics", filepath.Join(t.exp.OutputDir, "metrics.jsonl")),
		zap.String("loss_curve", plotPath))
	return nil
}
