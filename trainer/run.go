package trainer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/internal/atomicfile"
	"convrep/internal/cli/progress"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/rundir"
)

// Run trains until the last step, then writes the final checkpoint, the model in HuggingFace layout and the
// loss curve. On ctx's cancellation (SIGINT, SIGTERM) it finishes the current step, checkpoints and returns
// ErrStopped.
func (t *Trainer) Run(ctx context.Context, opt Options) error {
	// libtorch's grad mode and error state are per OS thread: the whole run stays on one, and CUDA's current
	// device, also per thread, is made the model's GPU on it (a kernel or an allocation without a device
	// guard would otherwise go to GPU 0, and open a context there).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := torch.MakeCurrent(t.dev); err != nil {
		return err
	}
	if err := torch.GradOn(); err != nil { // the thread may come with autograd off (torch.GradOn says how)
		return err
	}
	e := t.exp
	if err := os.MkdirAll(e.OutputDir, 0o755); err != nil {
		return fmt.Errorf("output_dir: %w", err)
	}
	defer t.cl.close()
	defer func() { t.graph.free() }() // the graph may be stopped (nil) by then
	// Rank 0 alone logs, writes metrics and draws the progress bar; every rank trains.
	metrics := discardMetrics()
	if t.cl.leader() {
		m, err := openMetrics(e.OutputDir, t.pos.Step, e.WritesTensorBoard(), t.log)
		if err != nil {
			return err
		}
		metrics = m
		if m.tb != nil {
			t.log.Info("TensorBoard event file (tensorboard --logdir "+e.OutputDir+")", zap.String("path", m.tb.Path()))
		}
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

	if err := t.win.start(t.pos.Step+1, t.dev); err != nil {
		return err
	}
	defer t.win.tally.drop()
	l := &loop{metrics: metrics, bar: bar, start: time.Now(), perEpoch: int(t.perEpoch),
		perStep: e.Train.BatchSize * e.Train.GradAccumulation}
	early := t.valid != nil && t.valid.state.Stopped
	if early {
		t.log.Info("the run stopped early at this checkpoint; writing its best model", zap.Int64("step", t.pos.Step))
	}
	for !early && t.pos.Step < t.total {
		order := datasets.Order(t.data.Len(), e.Seed, t.pos.Epoch)
		steps := min(l.perEpoch-t.pos.Batch, int(t.total-t.pos.Step))
		batches := t.prefetch(order, t.pos.Epoch, t.pos.Batch, t.pos.Batch+steps)
		err := t.runEpoch(ctx, l, batches)
		batches.close()
		if errors.Is(err, errEarlyStop) {
			early = true
			break
		}
		if err != nil {
			return err
		}
		if t.pos.Batch >= l.perEpoch {
			t.pos.Epoch, t.pos.Batch = t.pos.Epoch+1, 0
		}
	}
	bar.Finish()
	if !early { // an early stop checkpointed its step already
		if err := t.syncAndCheckpoint(metrics); err != nil {
			return err
		}
	}
	if !t.cl.leader() {
		return nil
	}
	return t.finish()
}

// loop is what the steps of a run share beside the Trainer.
type loop struct {
	metrics  *metricsLog
	bar      *progress.Bar
	start    time.Time
	perEpoch int  // steps in an epoch: with a kept last partial batch, one more than the full ones (epochSteps)
	perStep  int  // examples in a step
	stopping bool // every rank agreed to stop after the step just taken
}

// runEpoch takes the steps of an epoch that batches builds, until the epoch or the run ends or a stop. The
// host reads the device only at log and checkpoint steps (settle): any other step queues its kernels and
// goes on to the next.
func (t *Trainer) runEpoch(ctx context.Context, l *loop, batches *prefetcher) error {
	for t.pos.Batch < l.perEpoch && t.pos.Step < t.total {
		if l.stopping || (!t.cl.multi() && ctx.Err() != nil) {
			if err := t.syncAndCheckpoint(l.metrics); err != nil {
				return err
			}
			t.log.Info("stopped by signal", zap.Int64("step", t.pos.Step))
			return ErrStopped
		}
		stepStart := time.Now()
		mbs, rows, err := batches.next()
		wait := time.Since(stepStart)
		if err == nil {
			err = t.take(t.pos.Step, mbs, rows)
		}
		dropBatches(mbs)
		if err != nil {
			return fmt.Errorf("step %d: %w", t.pos.Step+1, err)
		}
		// The position moves past the batch before the checkpoint below records it: a resume starts
		// with the next batch, not this one again.
		t.pos.Step, t.pos.Batch = t.pos.Step+1, t.pos.Batch+1
		if err := t.endStep(ctx, l, stepStart, wait); err != nil {
			return err
		}
	}
	return nil
}

// endStep follows the step just taken, started at stepStart (wait of it for its batch): at a log or checkpoint step
// the tally's reading, the objective's hook, the step's count, at a log step the metrics line and the
// validation, at a checkpoint step (or when the validation stops the run: errEarlyStop) the checkpoint.
func (t *Trainer) endStep(ctx context.Context, l *loop, stepStart time.Time, wait time.Duration) error {
	e := t.exp
	logStep := t.pos.Step%e.Train.LogEvery == 0 || t.pos.Step == t.total
	// eval_every is a multiple of log_every: an evaluation's step is a log step.
	evalStep := t.valid != nil && t.pos.Step%e.Train.EvalEvery == 0
	checkpointStep := t.pos.Step%e.Train.CheckpointEvery == 0 && t.pos.Step < t.total
	var r reading
	if logStep || checkpointStep {
		var err error
		if r, err = t.settle(ctx.Err() != nil); err != nil {
			return err
		}
		t.win.loss.LossSum = r.loss
		l.stopping = r.stop
	}
	if err := t.afterStep(l.perEpoch); err != nil {
		return fmt.Errorf("step %d: %w", t.pos.Step, err)
	}
	t.win.timeStep(l.perStep, time.Since(stepStart), wait)
	l.bar.Add(1)
	early := false // the validation at this step stops the run
	if logStep {
		m, err := t.win.line(t.pos, t.opt, r.norm, time.Since(l.start))
		if err != nil {
			return fmt.Errorf("step %d: %w", t.pos.Step, err)
		}
		if evalStep {
			if early, err = t.validate(&m); err != nil {
				return err
			}
		}
		l.bar.Describe(fmt.Sprintf("loss %.4f", m.Loss))
		if err := l.metrics.write(m); err != nil {
			return err
		}
		t.log.Debug("step", zap.Int64("step", m.Step), zap.Float64("loss", m.Loss), zap.Float64("pairs_per_s", m.PairsPerS))
		if err := t.win.next(); err != nil {
			return err
		}
	}
	if checkpointStep || early {
		if err := t.syncAndCheckpoint(l.metrics); err != nil {
			return err
		}
	}
	if early {
		return errEarlyStop
	}
	return nil
}

// syncAndCheckpoint checks the steps not yet read, makes the metrics lines written so far durable, then
// writes the checkpoint: after a crash, the metrics reach at least the newest checkpoint's step.
func (t *Trainer) syncAndCheckpoint(metrics *metricsLog) error {
	// The steps since the last reading must be finite before their weights are written (a stop by signal
	// comes between readings).
	if t.win.tally.from <= t.pos.Step {
		r, err := t.settle(false)
		if err != nil {
			return err
		}
		t.win.loss.LossSum = r.loss
	}
	if err := metrics.sync(); err != nil {
		return err
	}
	return t.saveCheckpoint()
}

// finish saves the trained encoder with its tokenizer in HuggingFace layout and draws the loss curve. The
// model folder is written whole beside its place and then put there, so that a crash leaves the previous
// model/ or the new one, never weights of one run with the tokenizer of another.
func (t *Trainer) finish() error {
	dir := rundir.At(t.exp.OutputDir).ModelDir()
	var err error
	if t.valid != nil && t.valid.state.BestStep > 0 {
		err = t.writeBestAsModel(dir)
		t.log.Info("the run's model is its best evaluation's", zap.Int64("step", t.valid.state.BestStep),
			zap.Float64("valid_loss", t.valid.state.BestLoss))
	} else {
		err = atomicfile.WriteDir(dir, t.writeModel)
	}
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
	events, err := EventFile(t.exp.OutputDir)
	if err != nil || !t.exp.WritesTensorBoard() {
		events = ""
	}
	t.log.Info("done", zap.String("model", dir), zap.String("metrics", rundir.At(t.exp.OutputDir).MetricsPath()),
		zap.String("loss_curve", plotPath), zap.String("tensorboard", events),
		zap.String("attention", models.AttentionBackends()))
	return nil
}

// writeModel saves the encoder as it is now, with its tokenizer and model card, into dir.
func (t *Trainer) writeModel(dir string) error {
	if err := t.bb.Model.Save(dir); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if err := t.bb.Tok.Save(dir); err != nil {
		return fmt.Errorf("save tokenizer: %w", err)
	}
	if err := t.describeModel(dir); err != nil {
		return fmt.Errorf("describe the model: %w", err)
	}
	return nil
}
