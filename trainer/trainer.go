package trainer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
	"go.uber.org/zap"

	"convrep/internal/torch"
	"convrep/objectives"
	"convrep/tokenizers"
	"convrep/trainer/optim"
)

// Trainer holds everything one run needs; New builds it and Run trains.
type Trainer struct {
	exp     *Experiment
	log     *zap.Logger
	dev     gotch.Device
	bb      *backbone
	obj     objectives.Objective
	data    Dataset
	opt     *optim.Optimizer
	sched   optim.Schedule
	params  map[string]*ts.Tensor // every trainable tensor by name: the encoder's and the objective's
	groups  []optim.Group
	digest  string
	pos     Position
	total   int64    // optimiser steps the run will make
	cl      *cluster // this process's rank among the data-parallel ranks
	rankRNG bool     // this rank's dropout stream came from the checkpoint
}

// Options are the command line's choices beside the experiment file.
type Options struct {
	Resume   bool     // continue from the newest checkpoint in the output folder
	Progress *os.File // where the progress bar goes; nil for none
}

// New checks the experiment's inputs (backbone, tokenizer, corpora) before any work, then builds the model,
// objective, data and optimiser, and restores the newest checkpoint when resuming.
func New(ctx context.Context, e *Experiment, opt Options, log *zap.Logger) (_ *Trainer, err error) {
	modelDir, tokDir, err := resolveBackbone(ctx, e.Model, log)
	if err != nil {
		return nil, err
	}
	dev, err := torch.ParseDevice(e.Model.Device)
	if err != nil {
		return nil, fmt.Errorf("model.device: %w", err)
	}
	files, err := corpusFiles(e.Data)
	if err != nil {
		return nil, err
	}
	objName, _ := e.Objective["name"].(string)
	if !contains(objectives.Names(), strings.ToLower(objName)) {
		return nil, fmt.Errorf("objective.name %q is not one of %s", objName, strings.Join(objectives.Names(), ", "))
	}
	paths, err := checkpoints(e.OutputDir)
	if err != nil {
		return nil, err
	}
	if len(paths) > 0 && !opt.Resume {
		return nil, fmt.Errorf("%s already holds checkpoints of a run (%s): pass --resume to continue it, or choose another output_dir",
			e.OutputDir, filepath.Base(paths[len(paths)-1]))
	}
	if e.Train.Threads > 0 {
		if err := torch.SetNumThreads(e.Train.Threads); err != nil {
			return nil, err
		}
	}

	cl, err := joinCluster(e, dev)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cl.close()
		}
	}()
	e.ranks = cl.world()
	if cl.multi() && dev.IsCuda() {
		dev = gotch.CudaBuilder(uint(cl.env.LocalRank)) // one GPU per rank of this node
	}
	t := &Trainer{exp: e, log: log, dev: dev, digest: e.digest(), cl: cl}
	if t.bb, err = buildBackbone(e, modelDir, tokDir, dev, log); err != nil {
		return nil, err
	}
	settings := objectives.Settings{}
	for k, v := range e.Objective {
		if k != "name" {
			settings[k] = v
		}
	}
	if t.obj, err = objectives.New(objName, t.bb.model, settings); err != nil {
		return nil, fmt.Errorf("%s: [objective]: %w", e.path, err)
	}
	if gb, ok := t.obj.(objectives.GlobalBatch); ok && cl.multi() && !cl.local {
		gb.SetGather(cl.gather)
	}
	trunc := tokenizers.TruncateRight
	if e.Model.Truncation == "left" {
		trunc = tokenizers.TruncateLeft
	}
	if t.data, err = datasetFor(t.obj.Name(), e, t.bb.tok, tokDir, files, trunc, log); err != nil {
		return nil, err
	}
	if err := t.buildOptimizer(); err != nil {
		return nil, err
	}
	if len(paths) > 0 {
		if err := t.restore(paths[len(paths)-1]); err != nil {
			return nil, err
		}
	}
	if err := t.syncRanks(); err != nil {
		return nil, err
	}
	if err := cl.watch(t.groups); err != nil {
		return nil, err
	}
	return t, nil
}

// buildOptimizer puts the encoder's parameters in one group (train.lr) and those the objective added, such
// as DSE's contrastive head, in another (train.head_lr). Parameters the objective freezes (frozenNames) stay
// in the checkpoints but out of every group, so neither the optimiser nor the gradient clipping sees them,
// and autograd stops at them.
func (t *Trainer) buildOptimizer() error {
	e := t.exp
	perEpoch := int64(t.data.Len() / (e.Train.BatchSize * e.Train.GradAccumulation))
	if perEpoch == 0 {
		return fmt.Errorf("%d examples make no full batch of %d×%d", t.data.Len(), e.Train.BatchSize, e.Train.GradAccumulation)
	}
	t.total = perEpoch * int64(e.Train.Epochs)
	if e.Train.MaxSteps > 0 && (e.Train.Epochs == 0 || e.Train.MaxSteps < t.total) {
		t.total = e.Train.MaxSteps
	}
	encoder := t.bb.model.Params()
	frozen, err := frozenNames(t.obj, t.bb.model)
	if err != nil {
		return err
	}
	t.params = map[string]*ts.Tensor{}
	enc := optim.Group{Name: "encoder", LR: e.Train.LR, WeightDecay: e.Train.WeightDecay}
	head := optim.Group{Name: "head", LR: e.Train.HeadLR, WeightDecay: e.Train.WeightDecay}
	var names []string
	for name := range t.bb.model.VS.Variables() {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p, err := t.bb.model.VS.Root().Get(name)
		if err != nil {
			return err
		}
		if !p.MustRequiresGrad() {
			continue
		}
		t.params[name] = p
		if frozen[name] {
			p.MustRequiresGrad_(false)
			continue
		}
		g := &head
		if encoder[name] != nil {
			g = &enc
		}
		g.Params, g.ParamNames = append(g.Params, p), append(g.ParamNames, name)
	}
	if len(frozen) > 0 {
		t.log.Info("frozen parameters", zap.Int("tensors", len(frozen)))
	}
	t.groups = []optim.Group{enc}
	if len(head.Params) > 0 {
		t.groups = append(t.groups, head)
	}
	if t.opt, err = optim.New(optim.Config{Kind: strings.ToLower(e.Train.Optimizer)}, t.groups); err != nil {
		return err
	}
	t.sched, err = optim.ParseSchedule(e.Train.Schedule, e.Train.WarmupSteps, t.total)
	return err
}

// digest identifies what a checkpoint belongs to: the settings that change the trajectory. Output and
// logging knobs are left out, and so is max_steps under a constant schedule, so that such a run may be
// extended; a decaying schedule's rates depend on it.
func (e *Experiment) digest() string {
	c := *e
	c.OutputDir, c.Train.LogEvery, c.Train.CheckpointEvery, c.Train.KeepCheckpoints = "", 0, 0, 0
	if c.Train.Schedule == "constant" {
		c.Train.MaxSteps = 0
	}
	c.Data.CacheDir = ""
	b, _ := json.Marshal(c)
	// How the ranks talk changes no result, and neither does their number; whether negatives stay on their
	// rank does (the digests of runs written before [distributed] existed stay as they were).
	if e.Distributed.LocalNegatives {
		b = append(b, "local_negatives"...)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// ErrStopped is returned by Run after SIGINT / SIGTERM, once the current step is done and checkpointed.
var ErrStopped = errors.New("stopped by signal; checkpoint written")
