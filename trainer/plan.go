package trainer

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/experiment"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/rundir"
	"convrep/tokenizers"
)

// tokenObjectives predict tokens over the vocabulary (masked-LM logits), which the memory estimate counts.
var tokenObjectives = map[string]bool{"mlm": true, "futuretod": true, "rcl": true}

// modelConfig is the backbone's configuration as the run will build it, read before any weight is: the
// folder's config.json, or [model.random]'s sizes with the tokenizer's vocabulary. model.max_length must fit
// its position table.
func modelConfig(e *experiment.Experiment, modelDir, tokDir string) (*models.Config, error) {
	var c *models.Config
	if r := e.Model.Random; r != nil {
		tok, err := tokenizers.Load(tokDir)
		if err != nil {
			return nil, fmt.Errorf("model.tokenizer: %w", err)
		}
		if c, err = r.ModelConfig(tok); err != nil {
			return nil, err
		}
	} else {
		var err error
		if c, err = models.ReadConfig(filepath.Join(modelDir, "config.json")); err != nil {
			return nil, fmt.Errorf("model.backbone %s: %w", modelDir, err)
		}
	}
	if n := int64(e.Model.MaxLength); n > c.MaxSequence() {
		return nil, fmt.Errorf("model.max_length = %d is above the %d positions of the model (max_position_embeddings): "+
			"the position table has no row for the tokens beyond", n, c.MaxSequence())
	}
	return c, nil
}

// footprint estimates one rank's memory: each example is two sequences of model.max_length tokens (a pair, or a
// view and its twin), train.batch_size of them a micro-batch, split evenly over the world's ranks.
func footprint(e *experiment.Experiment, c *models.Config, world int) Footprint {
	name, _ := e.Objective["name"].(string)
	rows := 2 * int64(e.Train.BatchSize) / int64(max(1, world))
	return EstimateFootprint(c, rows, int64(e.Model.MaxLength), e.Train.Precision == "bf16", tokenObjectives[name])
}

// ranks is this run's data-parallel environment, and how many of its ranks share this host's memory (all of
// this node's, which are the whole world but for a multi-node job, where LOCAL_WORLD_SIZE says).
func ranks() (env distEnv, local int) {
	env, err := readDistEnv(os.Getenv)
	if err != nil || env.World < 1 {
		return distEnv{World: 1}, 1 // joinCluster reports a bad environment
	}
	local = env.World
	if n, err := strconv.Atoi(os.Getenv("LOCAL_WORLD_SIZE")); err == nil && n >= 1 && n <= env.World {
		local = n
	}
	return env, local
}

// available is the memory the run's device has free: the GPU's, or the host's (bounded by a cgroup limit). A
// rank of a data-parallel job asks its own GPU, the one bindRank will give it (its LOCAL_RANK's, or the one
// convrep's launcher left it), never GPU 0, where the question would open a CUDA context for every rank.
func available(dev gotch.Device, env distEnv) (int64, string, error) {
	if !dev.IsCuda() {
		return hostAvailable()
	}
	if env.World > 1 {
		if !env.OwnGPU && !env.LocalRankSet {
			return 0, "", fmt.Errorf("LOCAL_RANK is not set: which GPU is this rank's is not known yet")
		}
		idx := env.LocalRank
		if env.OwnGPU {
			idx = 0
		}
		dev = gotch.CudaBuilder(uint(idx))
	}
	free, _, err := torch.CUDAMemInfo(dev)
	return free, "free on " + torch.DeviceName(dev), err
}

// checkMemory refuses a run whose estimate exceeds what its device has, naming both, unless
// train.skip_memory_check is set; it runs before the model or the data are built.
func checkMemory(e *experiment.Experiment, c *models.Config, dev gotch.Device, log *zap.Logger) error {
	env, local := ranks()
	f := footprint(e, c, env.World)
	if !dev.IsCuda() { // the ranks of a node share its host memory; each GPU is a rank's own
		f = f.times(int64(local))
	}
	avail, where, err := available(dev, env)
	if err != nil {
		log.Warn("the memory check could not read the device's free memory; going on", zap.Error(err))
		return nil
	}
	log.Debug("memory estimate", zap.Int64("bytes", f.Total()), zap.Int64("available", avail))
	if f.Total() <= avail {
		return nil
	}
	msg := fmt.Sprintf("the run needs about %s (%s); %s available (%s)", humanBytes(f.Total()), f.parts(), humanBytes(avail), where)
	if e.Train.SkipMemoryCheck {
		log.Warn(msg + "; going on, as train.skip_memory_check is set")
		return nil
	}
	return fmt.Errorf("%s: %s: make the model or train.batch_size smaller, or set train.skip_memory_check = true to try anyway", e.Path(), msg)
}

// parts lists the estimate's parts.
func (f Footprint) parts() string {
	return fmt.Sprintf("%.1fM parameters: weights %s, gradients %s, optimiser %s, activations about %s",
		float64(f.Params)/1e6, humanBytes(f.Weights), humanBytes(f.Grads), humanBytes(f.Optimizer), humanBytes(f.Activations))
}

// DryRun prints what a run of e would do, without doing it: every path it resolved, the model and its
// parameters, the memory estimate beside what the device has, the data it would read, read as the run reads
// it when it is small enough (dryRunReadBytes): its malformed records, the validation split and the examples
// on each side; its steps and its checkpoints. Then each problem the run would stop on, with the setting that
// fixes it, and an error when there is one. It writes nothing: no cache, no output folder, no model (a
// backbone named on the hub is still resolved, downloaded when missing).
func DryRun(ctx context.Context, e *experiment.Experiment, w io.Writer, log *zap.Logger) error {
	modelDir, tokDir, err := experiment.Resolve(ctx, e.Model, log)
	if err != nil {
		return err
	}
	dev, err := torch.ParseDevice(e.Model.Device)
	if err != nil {
		return fmt.Errorf("model.device: %w", err)
	}
	c, err := modelConfig(e, modelDir, tokDir)
	if err != nil {
		return err
	}
	var problems []string
	env, _ := ranks()
	f := footprint(e, c, env.World)
	pf := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	pf("experiment  %s (%s)", e.Name, e.Path())
	writePaths(w, e, modelDir, tokDir)
	from := "random initialisation"
	if modelDir != "" {
		from = modelDir
	}
	pf("model       %s, %d layers, hidden %d, %d heads, feed-forward %d, %d positions, vocabulary %d; from %s",
		c.Arch, c.NumLayers, c.HiddenSize, c.NumHeads, c.IntermediateSize, c.MaxSequence(), c.VocabSize, from)
	pf("parameters  %d (%.1fM) in the backbone; the objective's head adds a few", f.Params, float64(f.Params)/1e6)
	pf("step        %d examples × 2 sequences × %d tokens, precision %s, on %s", e.Train.BatchSize, e.Model.MaxLength,
		cmp.Or(e.Train.Precision, "fp32"), torch.DeviceName(dev))
	pf("memory      about %s: weights %s, gradients %s, optimiser %s, activations about %s", humanBytes(f.Total()),
		humanBytes(f.Weights), humanBytes(f.Grads), humanBytes(f.Optimizer), humanBytes(f.Activations))
	if avail, where, err := available(dev, env); err != nil {
		pf("available   unknown (%v)", err)
	} else {
		verdict := "fits"
		if f.Total() > avail {
			verdict = "does not fit: train would refuse to start (train.skip_memory_check = true to try anyway)"
			if !e.Train.SkipMemoryCheck {
				problems = append(problems, fmt.Sprintf("the run needs about %s, %s available (%s): make the model or train.batch_size smaller, or set train.skip_memory_check = true to try anyway",
					humanBytes(f.Total()), humanBytes(avail), where))
			}
		}
		pf("available   %s (%s): %s", humanBytes(avail), where, verdict)
	}
	files, err := corpusFiles(e.Data)
	readable := err == nil
	if err != nil {
		problems = append(problems, err.Error())
	}
	if len(e.Data.Corpora) > 0 && readable {
		pf("corpora     %s: %d files, %s, under %s", strings.Join(e.Data.Corpora, ", "), len(files), humanBytes(sizeOf(files)), e.Data.Root)
	}
	size := sizeOf(files)
	if fs := e.Data.FileSet(); fs != nil && readable {
		own, _ := fs.List() // corpusFiles listed them
		size += sizeOf(own)
		pf("files       %d (%s): %s", len(own), humanBytes(sizeOf(own)), strings.Join(own, ", "))
		for _, n := range fs.Notices() {
			pf("notice      %s", n)
		}
	}
	var plan *dataPlan
	switch {
	case !readable:
		pf("data        not read: a path above is wrong")
	case size > dryRunReadBytes:
		pf("data        not read: %s is more than the %s a dry run reads; the run reads it (convrep data check EXPERIMENT.toml checks files of any size)",
			humanBytes(size), readBound())
	default:
		if plan, err = readPlan(e); err != nil {
			problems = append(problems, err.Error())
			pf("data        not read: %v", err)
			break
		}
		problems = append(problems, plan.problems(e, env.World)...)
		plan.write(w, e)
	}
	steps := fmt.Sprintf("%d epochs of ⌈examples / %d⌉ steps (the examples are counted when the data is built)", e.Train.Epochs,
		e.Train.BatchSize*e.Train.GradAccumulation)
	if plan != nil && plan.pairs {
		if perEpoch, total, err := runSteps(plan.train, env.World, e.Train); err == nil {
			steps = fmt.Sprintf("%d: %d epochs of %d steps (%d examples, %d a step)", total, e.Train.Epochs, perEpoch, plan.train,
				e.Train.BatchSize*e.Train.GradAccumulation)
		}
	}
	if e.Train.MaxSteps > 0 {
		steps = fmt.Sprintf("at most %d; ", e.Train.MaxSteps) + steps
	}
	pf("steps       %s", steps)
	pf("checkpoints every %d steps, the newest %d kept, each about %s, in %s", e.Train.CheckpointEvery,
		e.Train.KeepCheckpoints, humanBytes(f.Checkpoint()), rundir.At(e.OutputDir).CheckpointDir())
	if paths, err := rundir.At(e.OutputDir).Checkpoints(); err == nil && len(paths) > 0 {
		pf("resume      %s holds %d checkpoints: train would need --resume", e.OutputDir, len(paths))
	}
	if len(problems) > 0 {
		pf("problems    the run would stop on:")
		for _, p := range problems {
			pf("  - %s", p)
		}
	}
	pf("writes nothing (a dry run)")
	if len(problems) > 0 {
		noun := "problems"
		if len(problems) == 1 {
			noun = "problem"
		}
		return fmt.Errorf("%s: the run would stop: %d %s (listed above)", e.Path(), len(problems), noun)
	}
	return nil
}

// writePaths prints every path the run resolved: the backbone and tokenizer folders, the output, the data
// root, the cache and the files, each absolute.
func writePaths(w io.Writer, e *experiment.Experiment, modelDir, tokDir string) {
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil && p != "" {
			return a
		}
		return p
	}
	line := func(key, value string) { fmt.Fprintf(w, "  %-16s%s\n", key, value) }
	fmt.Fprintf(w, "paths       (relative ones in the experiment file are read from its folder)\n")
	switch {
	case e.Model.Random != nil:
		line("model.backbone", "none: [model.random]")
	case modelDir != e.Model.Backbone && modelDir != "":
		line("model.backbone", e.Model.Backbone+", in "+abs(modelDir))
	default:
		line("model.backbone", abs(e.Model.Backbone))
	}
	line("model.tokenizer", abs(tokDir))
	line("output_dir", abs(e.OutputDir))
	if len(e.Data.Corpora) > 0 {
		line("data.root", abs(e.Data.Root))
	}
	line("data.cache_dir", abs(e.Data.CacheDir))
	for i, f := range e.Data.Files {
		key := ""
		if i == 0 {
			key = "data.files"
		}
		line(key, abs(f))
	}
}

// write prints what reading the data showed: the dialogues and malformed records, the validation split and
// the examples of each side.
func (p *dataPlan) write(w io.Writer, e *experiment.Experiment) {
	pf := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	pf("data        read in %.1f s: %d dialogues, %d malformed records", p.took.Seconds(), p.dialogues, p.bad.Count)
	if p.bad.Count > 0 {
		what := "the run stops at the first (data.skip_bad = false)"
		if e.Data.SkipBad {
			what = "data.skip_bad skips each with its dialogue"
		}
		pf("malformed   %s:", what)
		p.bad.Write(w, "  ")
	}
	examples := "examples not counted: the objective makes them of tokens, counted when the run builds them"
	if p.pairs {
		examples = fmt.Sprintf("%d training examples (%s pairs)", p.train, e.Data.Pairs)
		if e.Data.MaxExamples > 0 {
			examples += fmt.Sprintf(", data.max_examples %d", e.Data.MaxExamples)
		}
	}
	if e.Train.ValidShare <= 0 {
		pf("examples    %s; no validation (train.valid_share = 0)", examples)
		return
	}
	split := fmt.Sprintf("%d of %d dialogues held out", p.held, p.dialogues)
	if p.split != nil {
		split = p.split.Error()
	} else if p.pairs {
		verdict := fmt.Sprintf("at least a batch of %d", e.Train.BatchSize)
		if validationFits(e.Train, p.held, p.valid) != nil {
			verdict = fmt.Sprintf("fewer than a batch of %d: the run would stop", e.Train.BatchSize)
		}
		split += fmt.Sprintf(", %d validation examples: %s", p.valid, verdict)
	}
	pf("examples    %s", examples)
	pf("validation  train.valid_share %g, seed %d: %s", e.Train.ValidShare, e.Seed, split)
}

// readBound is dryRunReadBytes in words.
func readBound() string {
	if dryRunReadBytes%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", dryRunReadBytes>>20)
	}
	return fmt.Sprintf("%d bytes", dryRunReadBytes)
}

// sizeOf is the bytes of the files at paths (those it can stat).
func sizeOf(paths []string) int64 {
	var n int64
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil {
			n += st.Size()
		}
	}
	return n
}
