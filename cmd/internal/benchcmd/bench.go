package benchcmd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"convrep/objectives/dse"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/tokenizers"
	"convrep/trainer"
	"convrep/trainer/optim"
)

// The fixed parts of the step: DSE's defaults, and AdamW at torch's default weight decay in both groups
// (scripts/bench_pytorch.py uses the same).
const (
	dropout     = 0.1 // BERT's hidden and attention dropout
	learnRate   = 1e-4
	weightDecay = 0.01
	temperature = 0.05
	mode        = "hardneg"
)

// The --precision values: fp32 throughout, or bf16 autocast over fp32 master weights.
const (
	fp32 = "fp32"
	bf16 = "bf16"
)

// options are the command line's choices.
type options struct {
	Layers, Hidden, Heads, Intermediate, Vocab, Batch, Seq int64
	Steps, Warmup, Threads                                 int
	Device                                                 string
	Precision                                              string  // fp32 or bf16
	PeakTFLOPS                                             float64 // 0: defaultPeak
	FindMaxBatch                                           bool    // double Batch up to MaxBatch until out of memory
	MaxBatch                                               int64
	Seed                                                   int64
	CPUProfile                                             string // file for a CPU profile of the timed steps
	CountCalls                                             bool   // count the libtorch calls of one more step
	CUDAGraphs                                             bool   // replay the step as a CUDA graph (trainer/graphs.go)
	FusedKernels                                           *bool  // train.fused_kernels: nil, as a run without it
	Losses                                                 string // file for each timed step's loss, one JSON line each
	Trace                                                  string // file for the Chrome trace of one more step (Kineto)
}

// result is the JSON line; scripts/bench_pytorch.py prints the same fields.
type result struct {
	Impl         string   `json:"impl"`
	StepS        float64  `json:"step_s"`
	CPUS         float64  `json:"cpu_s"` // process CPU time (user+system, all threads) per step: steadier than step_s on a busy machine
	PairsPerS    float64  `json:"pairs_per_s"`
	TokensPerS   float64  `json:"tokens_per_s"`
	Loss         float64  `json:"loss"`           // of the last timed step, to check that both sides train the same thing
	FlopsPerPair float64  `json:"flops_per_pair"` // model FLOPs of one pair's forward and backward (flops.go)
	ModelTFLOPS  float64  `json:"model_tflops"`   // FlopsPerPair × pairs_per_s, in TFLOP/s
	PeakTFLOPS   *float64 `json:"peak_tflops"`    // null when unknown (a CPU without --peak-tflops)
	MFU          *float64 `json:"mfu"`            // model_tflops / peak_tflops; null with peak_tflops
	Precision    string   `json:"precision"`
	Layers       int64    `json:"layers"`
	Hidden       int64    `json:"hidden"`
	Heads        int64    `json:"heads"`
	Intermediate int64    `json:"intermediate"`
	Vocab        int64    `json:"vocab"`
	Batch        int64    `json:"batch"`
	Seq          int64    `json:"seq"`
	Steps        int      `json:"steps"`
	Warmup       int      `json:"warmup"`
	Threads      int      `json:"threads"` // libtorch's intra-op threads during the run
	Device       string   `json:"device"`
	// BLASCore is the kernel set of the CPU BLAS, OpenBLAS's name for it (torch.BLASCore: "SkylakeX" for AVX-512,
	// "Zen" or "Haswell" for AVX2), "" when the BLAS is not OpenBLAS.
	BLASCore string `json:"blas_core"`
	// LibtorchCalls are the calls into libtorch of one step after the timed ones, per phase (torch.Counts:
	// calls from Go, operators the dispatcher ran, autograd nodes); null with --count-calls=false.
	LibtorchCalls *torch.Counts `json:"libtorch_calls"`
	// CUDAGraphs is whether the timed steps were replays of a CUDA graph (--cuda-graphs); the counted step is a
	// replay then too, its calls mostly "other" (the batch's copies and the replay).
	CUDAGraphs bool `json:"cuda_graphs"`
	// FusedKernels is whether the encoder ran on convrep's fused kernels (--fused-kernels).
	FusedKernels bool `json:"fused_kernels"`
	// Attention is the attention kernel the encoder ran (models.AttentionBackends): libtorch's choice for its
	// fused attention, e.g. "flash (no mask)" for the bench's unpadded batches, or the explicit path on 1.13.
	Attention string `json:"attention"`
}

func (o *options) validate() error {
	if o.Intermediate == 0 {
		o.Intermediate = 4 * o.Hidden
	}
	if o.Heads == 0 {
		o.Heads = max(1, o.Hidden/64)
	}
	for _, c := range []struct {
		name string
		v    int64
		min  int64
	}{{"layers", o.Layers, 1}, {"hidden", o.Hidden, 1}, {"heads", o.Heads, 1}, {"intermediate", o.Intermediate, 1},
		{"vocab", o.Vocab, 2}, {"batch", o.Batch, 2}, {"seq", o.Seq, 1}, {"steps", int64(o.Steps), 1},
		{"warmup", int64(o.Warmup), 0}, {"threads", int64(o.Threads), 0}} {
		if c.v < c.min {
			return fmt.Errorf("--%s = %d: must be at least %d", c.name, c.v, c.min)
		}
	}
	if o.Hidden%o.Heads != 0 {
		return fmt.Errorf("--heads = %d does not divide --hidden = %d", o.Heads, o.Hidden)
	}
	if o.Precision != fp32 && o.Precision != bf16 {
		return fmt.Errorf("--precision = %q: must be %s or %s", o.Precision, fp32, bf16)
	}
	if !(o.PeakTFLOPS >= 0) || math.IsInf(o.PeakTFLOPS, 0) {
		return fmt.Errorf("--peak-tflops = %v: must be a positive number (0 = the default)", o.PeakTFLOPS)
	}
	if o.FindMaxBatch && o.MaxBatch < o.Batch {
		return fmt.Errorf("--max-batch = %d is below --batch = %d", o.MaxBatch, o.Batch)
	}
	return nil
}

// benchmark builds the model, objective and optimiser, runs the warm-up steps, then times the others.
func benchmark(o options) (result, error) {
	if err := o.validate(); err != nil {
		return result{}, err
	}
	// Grad mode and gotch's error slot are per OS thread: the whole run stays on this one, as in trainer.Run.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := torch.GradOn(); err != nil {
		return result{}, err
	}
	dev, err := torch.ParseDevice(o.Device)
	if err != nil {
		return result{}, err
	}
	if o.Threads > 0 {
		if err := torch.SetNumThreads(o.Threads); err != nil {
			return result{}, err
		}
	}
	if o.FindMaxBatch {
		if o.Batch, err = findMaxBatch(o.Batch, o.MaxBatch, func(b int64) error { return tryBatch(o, dev, b) }); err != nil {
			return result{}, err
		}
	}
	if err := torch.ManualSeed(uint64(o.Seed)); err != nil {
		return result{}, err
	}
	s, err := newSetup(o, dev)
	if err != nil {
		return result{}, err
	}
	defer s.release()
	if err := s.warmUp(); err != nil {
		return result{}, err
	}
	if err := s.sync(); err != nil {
		return result{}, err
	}
	stop, err := startProfile(o.CPUProfile)
	if err != nil {
		return result{}, err
	}
	losses, err := openLossLog(o.Losses)
	if err != nil {
		return result{}, err
	}
	defer losses.close()
	var loss float64
	cpu0, err := cpuTime()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	for i := 0; i < o.Steps && err == nil; i++ {
		if i == o.Steps-1 || losses != nil {
			err = s.stepper.ResetLoss() // the line reports the last step's loss, as bench_pytorch.py does
		}
		if err == nil {
			err = s.step()
		}
		if err == nil && losses != nil {
			err = losses.write(i+1, s.stepper)
		}
		if err != nil {
			err = fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	if err == nil {
		err = losses.close()
	}
	if err == nil {
		if loss, err = s.stepper.ReadLoss(); err != nil {
			err = fmt.Errorf("step %d: %w", o.Steps, err)
		}
	}
	if err == nil {
		err = s.sync()
	}
	stepS := time.Since(start).Seconds() / float64(o.Steps)
	cpu1, cpuErr := cpuTime()
	if err = errors.Join(err, cpuErr, stop()); err != nil {
		return result{}, err
	}
	var counts *torch.Counts
	if o.CountCalls {
		c, err := s.countedStep()
		if err != nil {
			return result{}, fmt.Errorf("counted step: %w", err)
		}
		counts = &c
	}
	if o.Trace != "" {
		// One more step under the profiler, after the timed and counted ones: its kernels for
		// scripts/kernel_breakdown.py, beside bench_pytorch.py --trace's.
		err := torch.Profile(o.Trace, dev.IsCuda(), func() error {
			if err := s.step(); err != nil {
				return err
			}
			return s.sync()
		})
		if err != nil {
			return result{}, fmt.Errorf("--trace: %w", err)
		}
	}
	pairsPerS := float64(o.Batch) / stepS
	r := result{Impl: "convrep", StepS: stepS, CPUS: (cpu1 - cpu0) / float64(o.Steps), PairsPerS: pairsPerS,
		TokensPerS: float64(2*o.Batch*o.Seq) / stepS, Loss: loss, Precision: o.Precision,
		FlopsPerPair: flopsPerPair(o.Layers, o.Hidden, o.Intermediate, o.Seq), Layers: o.Layers, Hidden: o.Hidden,
		Heads: o.Heads, Intermediate: o.Intermediate, Vocab: o.Vocab, Batch: o.Batch, Seq: o.Seq, Steps: o.Steps,
		Warmup: o.Warmup, Threads: torch.NumThreads(), Device: o.Device, BLASCore: torch.BLASCore(),
		LibtorchCalls: counts, CUDAGraphs: s.stepper.Graphed(), FusedKernels: torch.KernelsLoaded(s.dev),
		Attention: models.AttentionBackends()}
	r.ModelTFLOPS = r.FlopsPerPair * pairsPerS / 1e12
	peak := o.PeakTFLOPS
	if peak == 0 {
		peak = defaultPeak(dev.IsCuda(), o.Precision)
	}
	if peak > 0 {
		u := mfu(r.FlopsPerPair, pairsPerS, peak)
		r.PeakTFLOPS, r.MFU = &peak, &u
	}
	return r, nil
}

// setup is what a step needs: the model, DSE, the trainer's step over AdamW, and the source of token ids.
type setup struct {
	o       options
	dev     gotch.Device
	model   *models.Model
	stepper *trainer.Stepper
	steps   int64 // taken so far
	rng     *rand.Rand
}

// newGraph makes the bench's CUDA graph on dev (tests stand in for it on the CPU).
var newGraph = func(dev gotch.Device) (torch.StepGraph, error) { return torch.NewGraph(dev) }

func newSetup(o options, dev gotch.Device) (*setup, error) {
	cfg, err := models.NewConfig(models.BERT, models.Sizes{VocabSize: o.Vocab, HiddenSize: o.Hidden, NumLayers: o.Layers,
		NumHeads: o.Heads, IntermediateSize: o.Intermediate, MaxSequence: max(512, o.Seq), Dropout: dropout})
	if err != nil {
		return nil, fmt.Errorf("build the model: %w", err)
	}
	m, err := models.New(cfg, models.Heads{}, dev)
	if err != nil {
		return nil, fmt.Errorf("build the model: %w", err)
	}
	s := &setup{o: o, dev: dev, model: m, rng: rand.New(rand.NewPCG(uint64(o.Seed), 0x62656e6368))}
	if err := s.addObjective(); err != nil {
		s.release()
		return nil, err
	}
	return s, nil
}

// addObjective adds DSE's head to the model and the trainer's step, AdamW over the groups DSE declares.
func (s *setup) addObjective() error {
	obj, err := objectives.Build(map[string]any{"name": dse.Name, "temperature": temperature, "mode": mode}, s.model)
	if err != nil {
		return err
	}
	groups, err := paramGroups(s.model, obj)
	if err != nil {
		return err
	}
	s.stepper, err = trainer.NewStepper(trainer.StepConfig{Objective: obj, Groups: groups, Optimizer: optim.AdamW,
		Device: s.dev, Precision: s.o.Precision, CUDAGraphs: s.o.CUDAGraphs, GraphWarmup: s.o.Warmup, NewGraph: newGraph,
		FusedKernels: s.o.FusedKernels})
	if err != nil && s.o.CUDAGraphs {
		return fmt.Errorf("--cuda-graphs: %w", err)
	}
	return err
}

// paramGroups are the optimiser groups of the objective's declared groups, all at the one rate of the bench.
func paramGroups(m *models.Model, obj objectives.Objective) ([]optim.Group, error) {
	var out []optim.Group
	for _, g := range obj.Groups() {
		og := optim.Group{Name: g.Name, LR: learnRate, WeightDecay: weightDecay}
		for _, name := range g.Params {
			p, err := m.VS.Root().Get(name)
			if err != nil {
				return nil, fmt.Errorf("parameter %s: %w", name, err)
			}
			og.Params, og.ParamNames = append(og.Params, p), append(og.ParamNames, name)
		}
		out = append(out, og)
	}
	if len(out) != 2 || len(out[1].Params) == 0 {
		return nil, fmt.Errorf("the dse objective declared no head parameters")
	}
	return out, nil
}

// release frees the step's graph and the model's parameters now; the optimiser's state goes with the garbage
// collector.
func (s *setup) release() {
	if s.stepper != nil {
		s.stepper.Free()
	}
	s.model.VS.Destroy()
}

// step is one trainer step on a new random batch (the batch made in torch.PhaseOther, as the trainer's
// prefetcher makes it beside the step).
func (s *setup) step() error {
	b, err := s.randomBatch()
	if err != nil {
		return err
	}
	err = s.stepper.Step(s.steps, b, int(s.o.Batch))
	s.steps++
	return err
}

// warmUp runs the untimed steps, each read back: --warmup eager ones (on the graph's stream with
// --cuda-graphs), then with --cuda-graphs the step that captures the graph and replays it.
func (s *setup) warmUp() error {
	n := s.o.Warmup
	if s.stepper.Graphed() {
		n++
	}
	for i := 0; i < n; i++ {
		err := s.stepper.ResetLoss()
		if err == nil {
			err = s.step()
		}
		if err == nil {
			_, err = s.stepper.ReadLoss()
		}
		if err != nil {
			return fmt.Errorf("warm-up step %d: %w", i+1, err)
		}
	}
	return nil
}

// countedStep runs one step under torch.Counting and returns its libtorch calls per phase.
func (s *setup) countedStep() (torch.Counts, error) {
	stop, err := torch.Counting()
	if err != nil {
		return torch.Counts{}, err
	}
	err = s.step()
	counts, stopErr := stop()
	if err == nil {
		_, err = s.stepper.ReadLoss()
	}
	return counts, errors.Join(err, stopErr)
}

// randomBatch is a step's two views, B rows of T token ids each drawn uniformly from the vocabulary, every
// token real, with zero token types (as trainer's padded() lays a batch out), on the device.
func (s *setup) randomBatch() (objectives.Batch, error) {
	view := func() *tokenizers.Batch {
		b := &tokenizers.Batch{}
		for i := int64(0); i < s.o.Batch; i++ {
			ids, mask := make([]int64, s.o.Seq), make([]int64, s.o.Seq)
			for j := range ids {
				ids[j], mask[j] = s.rng.Int64N(s.o.Vocab), 1
			}
			b.InputIDs = append(b.InputIDs, ids)
			b.AttentionMask = append(b.AttentionMask, mask)
			b.TokenTypeIDs = append(b.TokenTypeIDs, make([]int64, s.o.Seq))
			b.Lengths = append(b.Lengths, int(s.o.Seq))
		}
		return b
	}
	q, err := models.BatchInput(view(), s.dev)
	if err != nil {
		return objectives.Batch{}, err
	}
	r, err := models.BatchInput(view(), s.dev)
	if err != nil {
		q.Drop()
		return objectives.Batch{}, err
	}
	return objectives.Batch{Value: dse.Batch{Query: q, Response: r}, Drop: func() { q.Drop(); r.Drop() }}, nil
}

// sync waits for the device's queued work, so that the clock stops when the last step is done.
func (s *setup) sync() error {
	if !s.dev.IsCuda() {
		return nil
	}
	if err := ts.CudaSynchronize(s.dev.Value); err != nil {
		return fmt.Errorf("cuda synchronize: %w", err)
	}
	return nil
}

// startProfile starts Go's CPU profiler when path is set; the returned stop writes the profile. Time spent
// inside libtorch shows up under the Go functions that called it (runtime.cgocall), which is enough to tell
// model, loss, backward and optimiser apart; perf sees inside libtorch.
func startProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpu profile %s: %w", path, err)
		}
		return nil
	}, nil
}

// cpuTime is the CPU time the process has used so far, user and system, in seconds (Python's
// time.process_time()).
func cpuTime() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return sec(ru.Utime) + sec(ru.Stime), nil
}
