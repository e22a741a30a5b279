package datacmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"syscall"

	"go.uber.org/zap"

	"convrep/experiment"
	"convrep/internal/cli"
	"convrep/objectives"
	"convrep/trainer"
)

// setupPrepare is data prepare EXPERIMENT.toml: it builds the experiment's dataset as its run would
// (trainer.Prepare: the corpora, the tokens and whatever the objective derives from them, such as MGT's
// response pool embedded by its segment encoder and its L segments, MGT §3.3), through the same caches, so
// that the run, or every rank of a multi-GPU run, finds them built. It prints one JSON line: the dataset's
// report (objectives.Reporter), or its number of examples when it has none, and the process's memory.
func setupPrepare(fs *flag.FlagSet, args *[]string) action {
	var sets cli.Repeated
	fs.Var(&sets, "set", "override a key of the experiment, section.key=value in TOML syntax (repeatable)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: data prepare EXPERIMENT.toml [--set section.key=value ...]\n\n"+
			"Builds the experiment's dataset as its run would, through the same caches, without training, and prints\n"+
			"one JSON line: what the dataset reports (MGT: each phase's seconds, the caches hit, the segment\n"+
			"encoder, each segment's mean cosine, PoolMiB and NegativeMiB), or Examples where it reports nothing,\n"+
			"with PeakRSSMiB (the process's high-water resident memory, Go and libtorch), GoHeapMiB (the Go heap\n"+
			"in use at the end) and Workers.\n\nflags:\n")
		fs.PrintDefaults()
	}
	return func(ctx context.Context, stdout io.Writer, log *zap.Logger) error {
		e, err := experiment.Load((*args)[0], sets)
		if err != nil {
			return err
		}
		data, err := trainer.Prepare(ctx, e, log)
		if err != nil {
			return err
		}
		line, err := prepareReport(data)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(line))
		return err
	}
}

// process is what data prepare adds to the dataset's report.
type process struct {
	PeakRSSMiB float64 `json:"PeakRSSMiB"` // the process's high-water resident memory (Go and libtorch)
	GoHeapMiB  float64 `json:"GoHeapMiB"`  // Go heap in use at the end: what the dataset holds
	Workers    int     `json:"Workers"`
}

// prepareReport is data prepare's JSON line for data: the fields of its report (objectives.Reporter), or
// Examples, its length, when it has none, followed by the process's.
func prepareReport(data objectives.Dataset) ([]byte, error) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return nil, fmt.Errorf("getrusage: %w", err)
	}
	proc := process{PeakRSSMiB: float64(ru.Maxrss) / 1024, GoHeapMiB: float64(ms.HeapInuse) / (1 << 20), Workers: runtime.GOMAXPROCS(0)}
	var rep any = struct{ Examples int }{data.Len()}
	if r, ok := data.(objectives.Reporter); ok {
		rep = r.Report()
	}
	return joinObjects(rep, proc)
}

// joinObjects marshals a and b, each to a JSON object, and returns one object with a's fields, then b's.
func joinObjects(a, b any) ([]byte, error) {
	ja, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	ja, jb = bytes.TrimSpace(ja), bytes.TrimSpace(jb)
	if !isObject(ja) || !isObject(jb) {
		return nil, fmt.Errorf("joining %s and %s: want two JSON objects", ja, jb)
	}
	if len(ja) == 2 { // {}
		return jb, nil
	}
	if len(jb) == 2 {
		return ja, nil
	}
	return append(append(ja[:len(ja)-1:len(ja)-1], ','), jb[1:]...), nil
}

func isObject(j []byte) bool { return len(j) >= 2 && j[0] == '{' && j[len(j)-1] == '}' }
