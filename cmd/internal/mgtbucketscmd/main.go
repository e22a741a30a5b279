// Package mgtbucketscmd is the mgtbuckets command (cmd/mgtbuckets). It builds MGT's response pool and
// segments for an experiment file exactly as a run would (corpora, tokens, the pool embedded by the response
// encoder of the trained single dual encoder that objective.segment_encoder names (MGT §3.3; it must be trained
// first), the negatives of all L segments, through caches keyed by that encoder's weights) and prints what each
// phase took, in seconds, and the memory the process peaked at, as one JSON line, with the segment encoder's run
// and digest and the mean cosine of each segment's negatives to their ground truth:
//
//	go run ./cmd/mgtbuckets experiments/mgt_small_cpu.toml
//	go run ./cmd/mgtbuckets --set data.max_examples=0 --set 'data.corpora=["sgd","msr_e2e","kvret","frames","woz2","camrest676","metalwoz","taskmaster"]' experiments/mgt_small_cpu.toml
//
// The second line is the whole response pool of the shared pretraining corpora.
package mgtbucketscmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"convrep/objectives/mgt"

	"go.uber.org/zap"

	"convrep/experiment"
	"convrep/internal/cli"
	"convrep/internal/logging"
	"convrep/objectives"
	"convrep/trainer"
)

// report is the JSON line printed.
type report struct {
	mgt.Report
	PeakRSSMiB  float64 `json:"PeakRSSMiB"`  // the process's high-water resident memory (Go and libtorch)
	GoHeapMiB   float64 `json:"GoHeapMiB"`   // Go heap in use at the end: pool, tokens, negatives
	PoolMiB     float64 `json:"PoolMiB"`     // the embeddings alone: responses × dim × 4 bytes
	NegativeMiB float64 `json:"NegativeMiB"` // examples × L × (k−1) × 4 bytes
	Workers     int     `json:"Workers"`
}

// parse reads the command line args (after the command's name) into the experiment file and its overrides;
// usage and flag errors are printed to out. It returns flag.ErrHelp for -h / --help.
func parse(args []string, out io.Writer) (string, cli.Repeated, error) {
	fs := flag.NewFlagSet("mgtbuckets", flag.ContinueOnError)
	fs.SetOutput(out)
	var sets cli.Repeated
	fs.Var(&sets, "set", "override a key of the experiment, section.key=value in TOML syntax (repeatable)")
	args, err := cli.Parse(fs, args)
	if err != nil {
		return "", nil, err
	}
	if len(args) != 1 {
		fmt.Fprintln(out, "usage: mgtbuckets EXPERIMENT.toml [--set section.key=value ...]")
		return "", nil, fmt.Errorf("want one experiment file, got %d arguments %q", len(args), args)
	}
	return args[0], sets, nil
}

// Check parses args as Main does and returns what it would reject, without building anything.
func Check(args []string) error {
	_, _, err := parse(args, io.Discard)
	return cli.Checked(err)
}

// Main runs mgtbuckets on args, the command line after the command's name, and returns the exit status: 0, 1
// for a failure, 2 for a command line that does not parse.
func Main(args []string) int {
	path, sets, err := parse(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	log := logging.New()
	defer log.Sync()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, path, sets, log); err != nil {
		cli.Fail(os.Stderr, log, "mgtbuckets", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, path string, sets []string, log *zap.Logger) error {
	e, err := experiment.Load(path, sets)
	if err != nil {
		return err
	}
	data, err := trainer.Prepare(ctx, e, log)
	if err != nil {
		return err
	}
	reporter, ok := data.(objectives.Reporter)
	if !ok {
		return fmt.Errorf("%s: objective.name must be mgt", path)
	}
	rep, ok := reporter.Report().(mgt.Report)
	if !ok {
		return fmt.Errorf("%s: objective.name must be mgt", path)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return fmt.Errorf("getrusage: %w", err)
	}
	l := len(rep.SegmentSimilarity)
	k1, _ := e.Objective["candidates"].(int64)
	out := report{Report: rep, PeakRSSMiB: float64(ru.Maxrss) / 1024, GoHeapMiB: float64(ms.HeapInuse) / (1 << 20),
		PoolMiB: float64(rep.Pool*rep.Dim*4) / (1 << 20), NegativeMiB: float64(rep.Examples*l*int(max(k1-1, 0))*4) / (1 << 20),
		Workers: runtime.GOMAXPROCS(0)}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}
