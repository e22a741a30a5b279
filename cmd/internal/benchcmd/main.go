// Package benchcmd is the bench command (cmd/bench, convrep bench). It times one DSE training step of a
// randomly initialised BERT on random token ids and prints one JSON line with pairs/s, tokens/s and model
// FLOPs utilisation (MFU), so that convrep can be compared with PyTorch eager on the same machine (scripts/bench_pytorch.py prints the same line):
//
//	go run ./cmd/bench --device cuda --precision bf16 --layers 12 --hidden 768 --heads 12 --seq-len 32 --batch 512
//	python3 scripts/bench_pytorch.py --device cuda --precision bf16 --layers 12 --hidden 768 --heads 12 --seq-len 32 --batch 512
//
// A step is the trainer's own (trainer.Stepper, what cmd/train runs per step): two views of B×T token ids
// (all-ones attention mask) through the encoder as one batch, mean pooling, DSE's contrastive head and
// hard-negative loss (τ 0.05), backward, the gradient norm (measured, not clipped, as without
// train.max_grad_norm) and AdamW over the encoder and head groups (lr 1e-4, weight decay 0.01). With
// --precision bf16 the forward pass and the loss run under libtorch's bf16 autocast over fp32 weights. Warm-up
// steps are run first and not timed. --find-max-batch first looks for the largest batch that fits (doubling
// from --batch). --cuda-graphs captures the step once after the warm-up and times replays of it, as
// train.cuda_graphs does.
package benchcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"go.uber.org/zap"

	"convrep/internal/cli"
)

// Command is convrep bench; its Check parses without benchmarking.
var Command = cli.Command[options]{Name: "bench", Parse: parseFlags,
	Run: func(_ context.Context, o options, _ *zap.Logger) error { return run(o, os.Stdout) }}

// parseFlags reads the command line; usage and flag errors go to errOut.
func parseFlags(args []string, errOut io.Writer) (options, error) {
	o := options{}
	fs := cli.NewFlags("bench", "bench [flags]", benchAbout, errOut)
	fs.Int64Var(&o.Layers, "layers", 4, "transformer layers")
	fs.Int64Var(&o.Hidden, "hidden", 256, "hidden size")
	fs.Int64Var(&o.Heads, "heads", 0, "attention heads (must divide --hidden); 0 = hidden/64, BERT's head size")
	fs.Int64Var(&o.Intermediate, "intermediate", 0, "feed-forward size; 0 = 4×hidden")
	fs.Int64Var(&o.Vocab, "vocab", 30522, "vocabulary size (bert-base-uncased's by default)")
	fs.Int64Var(&o.Batch, "batch", 64, "pairs per step (the encoder sees 2×batch rows)")
	fs.Int64Var(&o.Seq, "seq-len", 32, "tokens per row")
	fs.Int64Var(&o.Seq, "seq", 32, "the same as --seq-len")
	fs.IntVar(&o.Steps, "steps", 20, "timed steps")
	fs.IntVar(&o.Warmup, "warmup", 3, "untimed steps run first")
	fs.IntVar(&o.Threads, "threads", 0, "libtorch intra-op threads; 0 = libtorch's default")
	fs.StringVar(&o.Device, "device", "cpu", "cpu, cuda or cuda:N")
	fs.StringVar(&o.Precision, "precision", fp32, "fp32, or bf16 (autocast over fp32 master weights)")
	fs.Float64Var(&o.PeakTFLOPS, "peak-tflops", 0, fmt.Sprintf("the device's peak dense TFLOP/s for MFU; 0 = on a GPU an "+
		"H100/H200 SXM's %g for bf16 (tensor cores) or %g for fp32 (CUDA cores; libtorch leaves TF32 off; "+
		"TF32 would be 495), on a CPU none (mfu is null)", peakBF16H100, peakFP32H100))
	fs.BoolVar(&o.FindMaxBatch, "find-max-batch", false, "first double --batch up to --max-batch until out of memory, "+
		"then time the largest batch that fitted")
	fs.Int64Var(&o.MaxBatch, "max-batch", 1024, "the largest batch --find-max-batch tries")
	fs.Int64Var(&o.Seed, "seed", 42, "seed of the initialisation, the dropout masks and the token ids")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a Go CPU profile of the timed steps to this file (go tool pprof)")
	fs.BoolVar(&o.CountCalls, "count-calls", true, "after the timed steps, run one more that counts its libtorch calls per phase "+
		"(libtorch_calls; counting slows the step, so it is not timed)")
	fs.BoolVar(&o.CUDAGraphs, "cuda-graphs", false, "capture the step as a CUDA graph after the warm-up steps (run eagerly on the "+
		"graph's stream) and time replays of it, as train.cuda_graphs does; needs a GPU")
	fs.BoolFunc("fused-kernels", "run the encoder on convrep's fused CUDA kernels (train.fused_kernels = true; they must "+
		"load); without it, libtorch's composites, as a run that leaves the setting out", func(v string) error {
		on, err := strconv.ParseBool(v)
		o.FusedKernels = &on
		return err
	})
	fs.StringVar(&o.Losses, "losses", "", "write each timed step's loss to this file, one JSON line {\"step\":N,\"loss\":L} each "+
		"(reading a loss waits for the device, so such a run's timing is not a benchmark)")
	fs.StringVar(&o.Trace, "trace", "", "after the timed steps, profile one more with libtorch's Kineto profiler (torch.profiler's) and "+
		"write its Chrome trace to this file; scripts/kernel_breakdown.py sums its kernels")
	err := cli.NoArgs(fs, args)
	return o, err
}

// benchAbout is what bench --help says below its usage line.
const benchAbout = "Times a DSE training step (forward of both views, contrastive loss, backward, AdamW) of a randomly\n" +
	"initialised BERT on random token ids and prints one JSON line:\n" +
	"{\"impl\":\"convrep\",\"step_s\":...,\"cpu_s\":...,\"pairs_per_s\":...,\"tokens_per_s\":...,\"loss\":...,\n" +
	" \"flops_per_pair\":...,\"model_tflops\":...,\"peak_tflops\":...,\"mfu\":...,\"precision\":...,<shape>,\"threads\":...,\"device\":...,\n" +
	" \"libtorch_calls\":{\"forward\":{\"calls\":...,\"ops\":...,\"backward_nodes\":...},\"loss\":...,\"backward\":...,\"optimizer\":...,\"other\":...}}\n" +
	"step_s is the mean wall time of a timed step, cpu_s the process CPU time per step (steadier on a busy\n" +
	"machine); tokens count both views (2·batch·seq per step). flops_per_pair is the model's FLOPs for one pair,\n" +
	"forward and backward, both sentences: 2·(6·N·T + 12·L·H·T²) with N = L·(4H² + 2H·I) the encoder's matmul\n" +
	"weights (PaLM appendix B; embeddings are look-ups and not counted); mfu = flops_per_pair·pairs_per_s / peak.\n" +
	"libtorch_calls counts one step after the timed ones, per phase: calls from Go into libtorch (on a GPU about\n" +
	"one kernel launch each, or more), operators libtorch's dispatcher ran at every nesting level (the backward\n" +
	"pass's are the autograd engine's), and the autograd nodes it applied.\n"

// run benchmarks and writes the result as one JSON line to w.
func run(o options, w io.Writer) error {
	r, err := benchmark(o)
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// Main runs the bench command line args (after the command's name): `bench serve ...` is the load benchmark of
// convrep serve (ServeCommand), anything else times a training step (Command).
func Main(args []string) int {
	if len(args) > 0 && args[0] == "serve" {
		return ServeCommand.Main(args[1:])
	}
	return Command.Main(args)
}

// Check parses args as Main does and returns what it would reject, without benchmarking.
func Check(args []string) error {
	if len(args) > 0 && args[0] == "serve" {
		return ServeCommand.Check(args[1:])
	}
	return Command.Check(args)
}
