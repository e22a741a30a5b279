// Package trainer runs an experiment: it builds the backbone the objective needs, the objective and its
// data, and trains with checkpoints that resume exactly. It knows objectives only through the objectives
// package's interfaces. Its loop reads top to bottom in run.go (batch, step, log, checkpoint), and its step in
// step.go (forward and loss, backward, clip, optimiser step), which cmd/bench times as it is.
package trainer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
	"go.uber.org/zap"

	"convrep/checkpoint"
	"convrep/datasets"
	"convrep/experiment"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/rundir"
	"convrep/tokenizers"
	"convrep/trainer/optim"
)

// Trainer holds everything one run needs; New builds it and Run trains.
type Trainer struct {
	Stepper  // the step (step.go): the objective, the optimiser, the ranks, the CUDA graph, the step counters
	exp      *experiment.Experiment
	bb       *experiment.Backbone
	data     objectives.Dataset
	params   map[string]*ts.Tensor // every trainable tensor by name: the encoder's and the objective's
	digest   string
	pos      checkpoint.Position
	total    int64       // optimiser steps the run will make
	perEpoch int64       // optimiser steps in an epoch
	restored rngSet      // the generators a resume restored (nil on a fresh run)
	valid    *validation // the held-out examples and the best evaluation; nil without validation
}

// Options are the command line's choices beside the experiment file.
type Options struct {
	Resume   bool     // continue from the newest checkpoint in the output folder
	Progress *os.File // where the progress bar goes; nil for none
}

// New checks the experiment's inputs (backbone, tokenizer, corpora) before any work, then builds the model,
// objective, data and optimiser, and restores the newest checkpoint that loads when resuming.
func New(ctx context.Context, e *experiment.Experiment, opt Options, log *zap.Logger) (_ *Trainer, err error) {
	paths, err := rundir.At(e.OutputDir).Checkpoints()
	if err != nil {
		return nil, err
	}
	if len(paths) > 0 && !opt.Resume {
		return nil, fmt.Errorf("%s already holds checkpoints of a run (%s): pass --resume to continue it, or choose another output_dir",
			e.OutputDir, filepath.Base(paths[len(paths)-1]))
	}
	t, validEnv, err := prepare(ctx, e, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			t.cl.close()
			t.graph.free()
		}
	}()
	if err := t.buildOptimizer(); err != nil {
		return nil, err
	}
	if validEnv != nil {
		if err := t.buildValidation(*validEnv); err != nil {
			return nil, err
		}
		if err := t.recordValidation(len(paths) > 0); err != nil {
			return nil, err
		}
	}
	if len(paths) > 0 {
		if err := t.restoreNewestGood(paths); err != nil {
			return nil, err
		}
	}
	if err := t.syncRanks(); err != nil {
		return nil, err
	}
	if err := t.cl.watch(t.groups); err != nil {
		return nil, err
	}
	return t, nil
}

// Prepare builds what a run of the experiment trains on, the backbone, the objective and its dataset,
// through the same caches as a run, without training; `convrep data prepare` uses it to build a dataset ahead.
func Prepare(ctx context.Context, e *experiment.Experiment, log *zap.Logger) (objectives.Dataset, error) {
	t, _, err := prepare(ctx, e, log)
	if err != nil {
		return nil, err
	}
	t.cl.close()
	t.graph.free()
	return t.data, nil
}

// prepare checks the inputs, joins the data-parallel ranks and builds the backbone, the objective and its
// dataset, and the held-out side of the data when train.valid_share asks for one. On success the caller owns t.cl.
func prepare(ctx context.Context, e *experiment.Experiment, log *zap.Logger) (_ *Trainer, validEnv *objectives.DataEnv, err error) {
	modelDir, tokDir, err := experiment.Resolve(ctx, e.Model, log)
	if err != nil {
		return nil, nil, err
	}
	dev, err := torch.ParseDevice(e.Model.Device)
	if err != nil {
		return nil, nil, fmt.Errorf("model.device: %w", err)
	}
	// What the configuration alone decides is checked before any data or weight is touched: the inputs fit the
	// position table, and the memory the run needs is there (plan.go).
	cfg, err := modelConfig(e, modelDir, tokDir)
	if err != nil {
		return nil, nil, err
	}
	if err := checkMemory(e, cfg, dev, log); err != nil {
		return nil, nil, err
	}
	files, err := corpusFiles(e.Data)
	if err != nil {
		return nil, nil, err
	}
	if e.Train.Threads > 0 {
		if err := torch.SetNumThreads(e.Train.Threads); err != nil {
			return nil, nil, err
		}
	}
	if err := deterministic(e.Train.Deterministic, dev, log); err != nil {
		return nil, nil, fmt.Errorf("train.deterministic: %w", err)
	}
	cl, err := joinCluster(e, dev)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			cl.close()
		}
	}()
	if cl.multi() && dev.IsCuda() {
		dev = gotch.CudaBuilder(uint(cl.gpu)) // one GPU per rank of this node (bindRank)
	}
	if err := useFusedKernels(e.Train.FusedKernels, dev, log); err != nil {
		return nil, nil, err
	}
	t := &Trainer{exp: e, digest: e.Digest(), Stepper: Stepper{log: log, dev: dev, cl: cl, bf16: e.Train.Precision == "bf16", maxNorm: e.Train.MaxGradNorm}}
	if t.bb, err = e.Build(modelDir, tokDir, e.Seed, dev, log); err != nil {
		return nil, nil, err
	}
	if t.obj, err = e.ObjectiveConfig().Build(t.bb.Model); err != nil {
		return nil, nil, fmt.Errorf("%s: [objective]: %w", e.Path(), err)
	}
	if gb, ok := t.obj.(objectives.GlobalBatch); ok && cl.multi() && !cl.local {
		gb.SetGather(cl.gather)
	}
	env := dataEnv(e, t.bb, files, cl.world(), dev, log)
	if t.graph = newGraphSteps(e, dev, cl.world(), log); t.graph != nil {
		env.FixedShapes = true // one shape to replay
	}
	if e.Train.ValidShare > 0 {
		train, valid := holdoutEnvs(env, e.Train.ValidShare, e.Seed)
		env, validEnv = train, &valid
	}
	if t.data, err = t.obj.Dataset(env); err != nil {
		t.graph.free()
		return nil, nil, err
	}
	return t, validEnv, nil
}

// dataEnv is what the objective's dataset is built from: the experiment's data, the backbone's tokenizer,
// this run's ranks, and a way to build the backbone again (MGT's frozen encoder).
func dataEnv(e *experiment.Experiment, bb *experiment.Backbone, files []string, ranks int, dev gotch.Device, log *zap.Logger) objectives.DataEnv {
	trunc := tokenizers.TruncateRight
	if e.Model.Truncation == "left" {
		trunc = tokenizers.TruncateLeft
	}
	return objectives.DataEnv{
		Root: e.Data.Root, Corpora: e.Data.Corpora, Files: files,
		Read: datasets.ReadOptions{SkipBad: e.Data.SkipBad, MergeSameSpeaker: e.Data.MergeSameSpeaker,
			MetaLWOZMultiWOZ: e.Data.MetaLWOZMultiWOZ, Logger: log, Files: e.Data.FileSet()},
		Pairs: e.Data.Pairs, BothDirections: e.Data.BothDirections, MinWords: e.Data.MinWords,
		MaxExamples: e.Data.MaxExamples, CacheDir: e.Data.CacheDir,
		Tok: bb.Tok, TokDir: bb.TokDir, MaxLength: e.Model.MaxLength, Truncation: trunc, Seed: e.Seed, Device: dev,
		BatchSize: e.Train.BatchSize, Ranks: ranks, Log: log,
		Encoder: func(seed int64) (*models.Model, error) { return secondEncoder(e, bb, seed, dev, log) },
	}
}

// secondEncoder builds the experiment's backbone again, its random parts seeded with seed, and puts
// libtorch's generators (the CPU's and the GPU's) back afterwards, so a run draws the same dropout masks
// whether or not it built one.
func secondEncoder(e *experiment.Experiment, bb *experiment.Backbone, seed int64, dev gotch.Device, log *zap.Logger) (*models.Model, error) {
	var b *experiment.Backbone
	err := keepRNG(dev, func() (err error) {
		b, err = e.Build(bb.ModelDir, bb.TokDir, seed, dev, log)
		return err
	})
	if err != nil {
		return nil, err
	}
	return b.Model, nil
}

// corpusFiles checks that every corpus of the experiment is present and lists the files it is read from, and
// that every file of data.files is there in a known format (the cache key lists those itself).
// It runs before any work, so that a wrong path fails at once, naming what is missing.
func corpusFiles(d experiment.DataConfig) ([]string, error) {
	if fs := d.FileSet(); fs != nil {
		if _, err := fs.List(); err != nil {
			return nil, fmt.Errorf("data.files: %w", err)
		}
	}
	if len(d.Corpora) == 0 {
		return nil, nil
	}
	if _, err := os.Stat(d.Root); err != nil {
		return nil, fmt.Errorf("data.root: %w", err)
	}
	var files []string
	for _, name := range d.Corpora {
		c, err := datasets.LookupCorpus(name)
		if err != nil {
			return nil, fmt.Errorf("data.corpora: %w", err)
		}
		fs, err := datasets.Files(name, filepath.Join(d.Root, c.Folder))
		if err != nil {
			return nil, fmt.Errorf("data.corpora: %w", err)
		}
		if len(fs) == 0 {
			return nil, fmt.Errorf("data.corpora: corpus %s: no files in %s", name, filepath.Join(d.Root, c.Folder))
		}
		files = append(files, fs...)
	}
	return files, nil
}

// buildOptimizer makes one optimiser group of each parameter group the objective declares, at the [train]
// rate the group names; a frozen group's parameters stay in the checkpoints but out of the optimiser and the
// gradient clipping, and autograd stops at them. Every trainable tensor of the model's VarStore must be in
// exactly one declared group.
func (t *Trainer) buildOptimizer() error {
	e := t.exp
	var err error
	if t.perEpoch, t.total, err = runSteps(t.data.Len(), t.cl.world(), e.Train); err != nil {
		return err
	}
	if scale, ok := e.HeadLRDefault(); ok {
		t.log.Info("train.head_lr not set: the objective's default, train.lr × its scale",
			zap.Float64("head_lr", e.Train.HeadLR), zap.Float64("lr", e.Train.LR), zap.Float64("scale", scale))
	}
	if keepLast(e.Train) {
		t.log.Info("each epoch keeps its last partial batch (train.drop_last = false)",
			zap.Int("examples", t.data.Len()), zap.Int64("steps_per_epoch", t.perEpoch))
	}
	groups, frozen, err := optimGroups(t.obj, t.bb.Model, e.Train)
	if err != nil {
		return fmt.Errorf("objective %s: %w", t.obj.Name(), err)
	}
	t.groups = groups
	t.params = map[string]*ts.Tensor{}
	for _, g := range groups {
		for i, name := range g.ParamNames {
			t.params[name] = g.Params[i]
		}
	}
	for name, p := range frozen {
		t.params[name] = p
		p.MustRequiresGrad_(false)
	}
	if len(frozen) > 0 {
		t.log.Info("frozen parameters", zap.Int("tensors", len(frozen)))
	}
	if t.opt, err = optim.New(optim.Config{Kind: strings.ToLower(e.Train.Optimizer)}, t.groups); err != nil {
		return err
	}
	if t.graph != nil {
		if err := t.opt.UseDeviceScalars(); err != nil { // the update a graph replays reads its scalars there
			t.stopGraphs(err.Error())
		}
	}
	t.sched, err = optim.ParseSchedule(e.Train.Schedule, e.Train.WarmupSteps, t.total)
	return err
}

// runSteps is the number of optimiser steps in an epoch of examples on world ranks (the last partial batch
// counted when the run keeps it, epochSteps) and in the whole run: epochs of them, or max_steps when that is
// fewer (or epochs is 0). Validation bounds each [train] size; the products are checked here again, so no
// setting can make them wrap.
func runSteps(examples, world int, tc experiment.TrainConfig) (perEpoch, total int64, err error) {
	perStep := int64(tc.BatchSize) * int64(tc.GradAccumulation)
	if tc.BatchSize < 1 || tc.GradAccumulation < 1 || perStep/int64(tc.GradAccumulation) != int64(tc.BatchSize) {
		return 0, 0, fmt.Errorf("train.batch_size %d × train.grad_accumulation %d is no batch", tc.BatchSize, tc.GradAccumulation)
	}
	perEpoch = int64(examples) / perStep
	if keepLast(tc) {
		perEpoch = int64(epochSteps(examples, int(perStep), world, true))
	}
	if perEpoch == 0 {
		return 0, 0, fmt.Errorf("%d examples make no full batch of %d×%d", examples, tc.BatchSize, tc.GradAccumulation)
	}
	if tc.Epochs < 0 || int64(tc.Epochs) > math.MaxInt64/perEpoch {
		return 0, 0, fmt.Errorf("train.epochs %d × %d steps per epoch is more steps than a run can count", tc.Epochs, perEpoch)
	}
	total = perEpoch * int64(tc.Epochs)
	if tc.MaxSteps > 0 && (tc.Epochs == 0 || tc.MaxSteps < total) {
		total = tc.MaxSteps
	}
	return perEpoch, total, nil
}

// optimGroups turns the objective's declared groups into the optimiser's (empty ones left out), and lists
// the frozen parameters. Every trainable tensor of m's VarStore must be declared exactly once.
func optimGroups(obj objectives.Objective, m *models.Model, tc experiment.TrainConfig) ([]optim.Group, map[string]*ts.Tensor, error) {
	trainable := map[string]*ts.Tensor{}
	for name := range m.VS.Variables() {
		p, err := m.VS.Root().Get(name)
		if err != nil {
			return nil, nil, err
		}
		if p.MustRequiresGrad() {
			trainable[name] = p
		}
	}
	declared := map[string]string{}
	var groups []optim.Group
	frozen := map[string]*ts.Tensor{}
	for _, g := range obj.Groups() {
		og := optim.Group{Name: g.Name, WeightDecay: tc.WeightDecay}
		switch g.Rate {
		case objectives.EncoderRate:
			og.LR = tc.LR
		case objectives.HeadRate:
			og.LR = tc.HeadLR
		case objectives.Frozen:
		default:
			return nil, nil, fmt.Errorf("group %s trains at %q, which is no rate of [train] (lr, head_lr)", g.Name, g.Rate)
		}
		for _, name := range g.Params {
			p, ok := trainable[name]
			if !ok {
				return nil, nil, fmt.Errorf("group %s names %s, which is no trainable parameter of the model", g.Name, name)
			}
			if other, dup := declared[name]; dup {
				return nil, nil, fmt.Errorf("parameter %s is in groups %s and %s", name, other, g.Name)
			}
			declared[name] = g.Name
			if g.Rate == objectives.Frozen {
				frozen[name] = p
				continue
			}
			og.Params, og.ParamNames = append(og.Params, p), append(og.ParamNames, name)
		}
		if len(og.Params) > 0 {
			groups = append(groups, og)
		}
	}
	var missing []string
	for name := range trainable {
		if _, ok := declared[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, nil, fmt.Errorf("its groups leave out %d trainable parameters (%s)", len(missing), strings.Join(missing[:min(3, len(missing))], ", "))
	}
	if len(groups) == 0 {
		return nil, nil, fmt.Errorf("it trains no parameter")
	}
	return groups, frozen, nil
}

// ErrStopped is returned by Run after SIGINT / SIGTERM, once the current step is done and checkpointed.
var ErrStopped = errors.New("stopped by signal; checkpoint written")

// deterministic sets libtorch's deterministic-kernels switch for this run, on or off (it is process-wide:
// a run must not inherit another's). On a GPU, cuBLAS reads CUBLAS_WORKSPACE_CONFIG when it creates its
// handle, so it is set here, before any kernel runs, unless the user set it.
func deterministic(on bool, dev gotch.Device, log *zap.Logger) error {
	if on && dev.IsCuda() {
		name, value, _ := strings.Cut(torch.DeterministicCuBLASEnv, "=")
		if os.Getenv(name) == "" {
			if err := os.Setenv(name, value); err != nil {
				return err
			}
			log.Info("deterministic kernels: cuBLAS workspace set", zap.String(name, value))
		}
	}
	return torch.SetDeterministic(on)
}
