// Command bench times one DSE training step of a randomly initialised BERT on random token ids and prints one
// JSON line, so that convrep can be compared with PyTorch on the same machine (bench/dse_step_pytorch.py
// prints the same line):
//
//	go run ./cmd/bench --layers 4 --hidden 256 --heads 4 --batch 64 --seq 32 --steps 20
//
// A step is what cmd/train does per step: two views of B×T token ids (all-ones attention mask) through the
// encoder as one batch, mean pooling, DSE's contrastive head and hard-negative loss (τ 0.05), backward and
// Adam over the encoder and head groups (lr 1e-4 both). Warm-up steps are run first and not timed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err == flag.ErrHelp {
		return
	}
	if err != nil {
		os.Exit(2)
	}
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line; usage and flag errors go to errOut.
func parseFlags(args []string, errOut io.Writer) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Int64Var(&o.Layers, "layers", 4, "transformer layers")
	fs.Int64Var(&o.Hidden, "hidden", 256, "hidden size")
	fs.Int64Var(&o.Heads, "heads", 4, "attention heads (must divide --hidden)")
	fs.Int64Var(&o.Intermediate, "intermediate", 0, "feed-forward size; 0 = 4×hidden")
	fs.Int64Var(&o.Vocab, "vocab", 30522, "vocabulary size (bert-base-uncased's by default)")
	fs.Int64Var(&o.Batch, "batch", 64, "pairs per step (the encoder sees 2×batch rows)")
	fs.Int64Var(&o.Seq, "seq", 32, "tokens per row")
	fs.IntVar(&o.Steps, "steps", 20, "timed steps")
	fs.IntVar(&o.Warmup, "warmup", 3, "untimed steps run first")
	fs.IntVar(&o.Threads, "threads", 0, "libtorch intra-op threads; 0 = libtorch's default")
	fs.StringVar(&o.Device, "device", "cpu", "cpu, cuda or cuda:N")
	fs.Int64Var(&o.Seed, "seed", 42, "seed of the initialisation, the dropout masks and the token ids")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a Go CPU profile of the timed steps to this file (go tool pprof)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bench [flags]\n\n"+
			"Times a DSE training step (forward of both views, contrastive loss, backward, Adam) of a randomly\n"+
			"initialised BERT on random token ids and prints one JSON line:\n"+
			"{\"impl\":\"convrep\",\"step_s\":...,\"cpu_s\":...,\"pairs_per_s\":...,\"tokens_per_s\":...,<shape>,\"threads\":...,\"device\":...}\n"+
			"step_s is the mean wall time of a timed step, cpu_s the process CPU time per step (steadier on a busy\n"+
			"machine); tokens count both views (2·batch·seq per step).\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "bench takes no arguments, got %q\n", fs.Args())
		fs.Usage()
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return o, nil
}

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
