// Package traincmd is the train command (cmd/train, convrep train): it runs one experiment file of experiments/:
//
//	go run ./cmd/train experiments/dse_bert_base.toml
//	go run ./cmd/train --set train.batch_size=256 --set train.lr=5e-6 experiments/dse_bert_base.toml
//	go run ./cmd/train --resume experiments/dse_small_cpu.toml
//
// SIGINT or SIGTERM finish the current step, write a checkpoint and exit 0; --resume continues from it.
//
// Data-parallel runs start one worker per GPU (or CPU process) with --nproc-per-node, or under any launcher
// that sets torchrun's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT (torchrun, SLURM, Kubernetes):
//
//	go run ./cmd/train --nproc-per-node 8 experiments/dse_bert_base.toml
//	go run ./cmd/train --nproc-per-node 8 --nnodes 2 --node-rank 0 --master-addr node0 --master-port 29500 experiments/dse_bert_base.toml
package traincmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"convrep/experiment"
	"convrep/internal/atomicfile"
	"convrep/internal/cli"
	"convrep/rundir"
	"convrep/trainer"
)

// options is a parsed command line.
type options struct {
	path          string // the experiment file
	sets          cli.Repeated
	resume, quiet bool
	dryRun        bool
	launch        launch
}

// parse reads the command line args (after the command's name); usage and flag errors are printed to out.
// It returns flag.ErrHelp for -h / --help.
func parse(args []string, out io.Writer) (*options, error) {
	fs := cli.NewFlags("train", "train EXPERIMENT.toml [--resume] [--dry-run] [--set section.key=value ...] [--nproc-per-node N ...]\n(flags before or after the file)", trainAbout, out)
	o := &options{}
	fs.BoolVar(&o.resume, "resume", false, "continue from the newest checkpoint in the experiment's output folder")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print every path the run resolved, the model, the memory estimate beside what the device has, "+
		"the data (read as the run reads it when under 64 MiB: malformed rows, the validation split, the examples), the steps and "+
		"the checkpoints the run would make, then each problem the run would stop on with the setting that fixes it (exit 1); write nothing")
	fs.Var(&o.sets, "set", "override a key of the experiment, section.key=value in TOML syntax (repeatable), e.g. --set train.lr=1e-5")
	l := &o.launch
	fs.IntVar(&l.nprocPerNode, "nproc-per-node", 0, "start this many data-parallel workers on this node (0: train in this process)")
	fs.IntVar(&l.nnodes, "nnodes", 1, "number of nodes of the job, each started with the same command")
	fs.IntVar(&l.nodeRank, "node-rank", 0, "this node's index among the nodes")
	fs.StringVar(&l.masterAddr, "master-addr", "127.0.0.1", "address of node 0, where rank 0 serves the rendezvous store")
	fs.IntVar(&l.masterPort, "master-port", 0, "port of the rendezvous store (0: a free one; required with several nodes)")
	rest, err := cli.Parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(rest) != 1 {
		fs.Usage()
		return nil, fmt.Errorf("want one experiment file, got %d arguments %q", len(rest), rest)
	}
	o.path = rest[0]
	return o, nil
}

// Check parses args as Main does and returns what it would reject, without training.
func Check(args []string) error { return command(nil, args).Check(args) }

// Main runs train on args, the command line after the command's name, and returns the exit status: 0, 1 for a
// failure, 2 for a command line that does not parse. prefix is what stands between the executable and args
// (nothing for cmd/train, "train" under convrep): the launcher of --nproc-per-node starts each worker as the
// executable, prefix and args without the launcher's flags.
func Main(prefix, args []string) int { return command(prefix, args).Main(args) }

// command is train's command line and work. The signals are train's own (not the skeleton's): a training run
// stops at the end of a step on SIGINT or SIGTERM, the launcher forwards them to its workers, and a dry run
// ends at once.
func command(prefix, args []string) cli.Command[*options] {
	return cli.Command[*options]{Name: "train", Parse: parse,
		Run: func(ctx context.Context, o *options, log *zap.Logger) error { return train(ctx, o, prefix, args, log) }}
}

// train runs the command line o: a dry run, a launcher of data-parallel workers, or one training process.
func train(ctx context.Context, o *options, prefix, args []string, log *zap.Logger) error {
	if o.dryRun {
		return dryRun(o.path, o.sets, log)
	}
	if o.launch.nprocPerNode > 0 {
		l := o.launch
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		// The file is loaded, strictly, as every worker will load it: a mistake in it fails here, before
		// any worker starts.
		e, err := experiment.Load(o.path, o.sets)
		if err != nil {
			return err
		}
		if l.nodeRank == 0 { // node 0's launcher holds the job's lock; its workers share it
			lock, err := rundir.Acquire(e.OutputDir)
			if err != nil {
				return err
			}
			defer lock.Release()
			if err := os.Setenv(rundir.HeldEnv, e.OutputDir); err != nil {
				return err
			}
		}
		if err := l.placeGPUs(e); err != nil {
			return err
		}
		return l.runWorkers(workerCommand(exe, prefix, args), 5*time.Second, log)
	}
	if r := os.Getenv("RANK"); r != "" && r != "0" {
		// Rank 0 speaks for the job; the others report only warnings and errors.
		log = log.WithOptions(zap.IncreaseLevel(zapcore.WarnLevel)).With(zap.String("rank", r))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, o.path, o.sets, o.resume, !o.quiet, log)
	if errors.Is(err, trainer.ErrStopped) {
		log.Info("stopped; continue with --resume")
		return nil
	}
	return err
}

// placeGPUs gives each worker its own GPU when the experiment trains on CUDA (launch.gpus).
func (l *launch) placeGPUs(e *experiment.Experiment) error {
	if dev := strings.ToLower(strings.TrimSpace(e.Model.Device)); dev != "cuda" && dev != "gpu" && !strings.HasPrefix(dev, "cuda:") {
		return nil
	}
	visible, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	var err error
	l.gpus, err = workerGPUs(l.nprocPerNode, visible, set)
	return err
}

// exitIfInterrupted ends the process when ctx is cancelled (SIGINT, SIGTERM) before built is closed, while the
// run builds its data and model: those loops do not watch for signals, and nothing they write is durable
// until complete (internal/atomicfile), so the process stops at once, removing the temporary files of the
// writes under way, and exits non-zero; the kernel releases the run folder's lock. Once training runs, Run stops
// at the end of a step with a checkpoint instead.
func exitIfInterrupted(ctx context.Context, built <-chan struct{}, log *zap.Logger) {
	select {
	case <-built:
	case <-ctx.Done():
		select {
		case <-built: // New returned meanwhile: Run stops cleanly
			return
		default:
		}
		atomicfile.RemovePending()
		log.Error("train: interrupted while the run was being set up (its data or model); nothing partial was written")
		log.Sync()
		os.Exit(1)
	}
}

// dryRun prints what the run would do (trainer.DryRun) on standard output, and fails when the run would stop.
func dryRun(path string, sets []string, log *zap.Logger) error {
	e, err := experiment.Load(path, sets)
	if err != nil {
		return err
	}
	return trainer.DryRun(context.Background(), e, os.Stdout, log)
}

func run(ctx context.Context, path string, sets []string, resume, bar bool, log *zap.Logger) error {
	e, err := experiment.Load(path, sets)
	if err != nil {
		return err
	}
	// One run per output folder: the lock is taken before anything there is read or written. Rank 0 takes it
	// for a data-parallel job; workers of convrep train --nproc-per-node share their launcher's.
	if r := os.Getenv("RANK"); (r == "" || r == "0") && !rundir.Shared(e.OutputDir) {
		lock, err := rundir.Acquire(e.OutputDir)
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	opt := trainer.Options{Resume: resume}
	if bar {
		opt.Progress = os.Stderr
	}
	built := make(chan struct{})
	go exitIfInterrupted(ctx, built, log)
	t, err := trainer.New(ctx, e, opt, log)
	close(built)
	if err != nil {
		return err
	}
	return t.Run(ctx, opt)
}

// trainAbout is what train --help says below its usage line.
const trainAbout = "Trains the experiment: the backbone, the objective, the data and the optimisation it names. Writes\n" +
	"checkpoints, metrics.jsonl, a TensorBoard event file of the same scalars (train.tensorboard, on by default;\n" +
	"tensorboard --logdir OUTPUT_DIR), loss.png and the final model (HuggingFace layout) under its output_dir.\n\n" +
	"With --nproc-per-node N it starts N data-parallel workers (c10d: Gloo on CPU, NCCL on GPU) and ends the\n" +
	"job with the failed worker's last lines when any worker fails. train.batch_size is the global batch,\n" +
	"split evenly over the workers; the result does not depend on their number. Under torchrun or another\n" +
	"launcher that sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, run it without\n" +
	"--nproc-per-node. Rank 0 alone logs, writes metrics and checkpoints. [distributed] in the experiment:\n" +
	"backend (auto, gloo, nccl), local_negatives (false: contrastive objectives use the global batch),\n" +
	"bucket_mb (25), timeout_s (600).\n"
