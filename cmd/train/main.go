// Command train runs one experiment file of experiments/:
//
//	go run ./cmd/train experiments/dse_bert_base.toml
//	go run ./cmd/train --set train.batch_size=256 --set train.lr=5e-6 experiments/dse_bert_base.toml
//	go run ./cmd/train --resume experiments/dse_small_cpu.toml
//
// SIGINT or SIGTERM finish the current step, write a checkpoint and exit 0; --resume continues from it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"go.uber.org/zap"

	"convrep/internal/logging"
	"convrep/trainer"
)

type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ", ") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	var sets setFlags
	resume := fs.Bool("resume", false, "continue from the newest checkpoint in the experiment's output folder")
	quiet := fs.Bool("quiet", false, "no progress bar")
	fs.Var(&sets, "set", "override a key of the experiment, section.key=value in TOML syntax (repeatable), e.g. --set train.lr=1e-5")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: train [--resume] [--set section.key=value ...] EXPERIMENT.toml\n\n"+
			"Trains the experiment: the backbone, the objective, the data and the optimisation it names. Writes\n"+
			"checkpoints, metrics.jsonl, loss.png and the final model (HuggingFace layout) under its output_dir.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		os.Exit(2)
	}
	log := logging.New()
	defer log.Sync()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, fs.Arg(0), sets, *resume, !*quiet, log)
	switch {
	case errors.Is(err, trainer.ErrStopped):
		log.Info("stopped; continue with --resume")
	case err != nil:
		log.Error("training failed", zap.Error(err))
		os.Exit(1)
	}
}

func run(ctx context.Context, path string, sets []string, resume, bar bool, log *zap.Logger) error {
	e, err := trainer.LoadExperiment(path, sets)
	if err != nil {
		return err
	}
	opt := trainer.Options{Resume: resume}
	if bar {
		opt.Progress = os.Stderr
	}
	t, err := trainer.New(ctx, e, opt, log)
	if err != nil {
		return err
	}
	return t.Run(ctx, opt)
}
