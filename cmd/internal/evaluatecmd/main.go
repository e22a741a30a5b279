// Package evaluatecmd is the evaluate command (cmd/evaluate, convrep evaluate): it parses each task's flags and
// runs convrep's evaluation suite (DSE §4.2 and Appendix B; the library is package evaluate/suite) on any model
// convrep can load:
//
//	go run ./cmd/evaluate intent   --model runs/dse_small_cpu --dataset clinc150 --shots 1,5 --seeds 0-9 --output out/clinc.json
//	go run ./cmd/evaluate oos      --model runs/dse_small_cpu --output out/oos.json
//	go run ./cmd/evaluate response --model runs/dse_small_cpu --dataset amazonqa --output out/amazonqa.json
//	go run ./cmd/evaluate sr       --model runs/dse_small_cpu --queries 2000 --seeds 0-2 --output out/sr.json   (MSR-E2E, from ../shared/data/pretrain)
//	go run ./cmd/evaluate select   --model runs/mgt_single_small_cpu --checkpoints runs/mgt_single_small_cpu --dataset multiwoz --candidates 20 --top 3 --output out/chosen.json
//	go run ./cmd/evaluate suite    --model experiments/dse_small_cpu.toml --output-dir out/untrained
//	go run ./cmd/evaluate report   --output table.md out/untrained out/trained
//	go run ./cmd/evaluate acts     --model M --dataset gsim --shots 10,20          (fine-tuning; also finetune-intent,
//	go run ./cmd/evaluate probe    --model M --probe bow                           finetune-response; tsne draws Figure 1)
//
// --model is a convrep run folder, a model folder, a hub name, or an experiment file (.toml; package modelref), which means its
// backbone before training: the untrained baseline, built from the same files or the same seeded
// initialisation. Every task writes a JSON file of rows (model, dataset, task, metric, mean, std, seeds,
// settings) and a Markdown table beside it.
package evaluatecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"go.uber.org/zap"

	"convrep/internal/cli"
)

// command is one subcommand: its flags and what it does with them.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, log *zap.Logger) error
}

func commands() []command {
	return []command{
		{"intent", "few-shot intent classification with prototypes (CLINC150, SNIPS, or --train/--test files)", runIntent},
		{"oos", "out-of-scope detection on CLINC150 (or --train/--test files with an oos label)", runOOS},
		{"response", "k-to-100 response selection (AmazonQA, Ubuntu IRC, MultiWOZ, or a --test file)", runResponse},
		{"sr", "semantic retrieval on MSR-E2E: 100 BM25 candidates re-ranked by cosine, MAP and MRR (DialogueCSE §5.1.2)", runSR},
		{"select", "choose checkpoints by response selection on MultiWOZ's validation split (MGT §4.2's checkpoint selection)", runSelect},
		{"suite", "every similarity-based task of the papers' tables, one JSON and Markdown file each", runSuite},
		{"acts", "dialogue act prediction by fine-tuning: DSTC2, GSIM few-shot, MultiWOZ fractions (multi-label F1)", runActs},
		{"finetune-intent", "intent classification by fine-tuning: k-shot and full, CLINC150 with oos as class 151", runFinetuneIntent},
		{"finetune-response", "response selection after fine-tuning a dual encoder with in-batch negatives (Ubuntu, MultiWOZ)", runFinetuneResponse},
		{"probe", "linear probes on frozen representations: bag-of-words and dialogue acts on MultiWOZ (MGT §5.2-5.3)", runProbe},
		{"tsne", "a t-SNE PNG of CLINC150 test coloured by intent, out-of-scope in black (Figure 1)", runTSNE},
		{"report", "lay the results of several models side by side, like the papers' tables", runReport},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: evaluate TASK [flags]   (evaluate TASK --help for the task's flags)\n\ntasks:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-16s %s\n", c.name, c.summary)
	}
}

// Main runs evaluate on args, the command line after the command's name, and returns the exit status: 0, 1 for
// a failure, 2 for a command line that does not parse.
func Main(args []string) int { return evaluateCommand.Main(args) }

var evaluateCommand = cli.Command[[]string]{Name: "evaluate", Parse: parseTask, Run: runTask, Interruptible: true}

// parseTask wants a task's name first; the task parses its own flags when it runs.
func parseTask(args []string, stderr io.Writer) ([]string, error) {
	if len(args) < 1 {
		usage(stderr)
		return nil, cli.ErrUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(os.Stdout)
		return nil, flag.ErrHelp
	}
	return args, nil
}

// runTask runs the task args[0] with its flags; a failure is reported under the task's name.
func runTask(ctx context.Context, args []string, log *zap.Logger) error {
	runtime.LockOSThread() // libtorch's grad mode is per thread
	err := dispatch(ctx, args, log)
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.Is(err, cli.ErrUsage) {
		return err
	}
	return fmt.Errorf("%s: %w", args[0], err)
}

// Check parses args as Main does, the task and its flags, and returns what it would reject, without loading a
// model or reading data.
func Check(args []string) error {
	if len(args) < 1 {
		return errors.New("no task")
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		return nil
	}
	if !slices.ContainsFunc(commands(), func(c command) bool { return c.name == args[0] }) {
		return fmt.Errorf("unknown task %q", args[0])
	}
	err := dispatch(context.WithValue(context.Background(), parseOnlyKey{}, true), args, zap.NewNop())
	if err == nil || errors.Is(err, errParsed) || errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// dispatch runs the task args[0] with the flags that follow it.
func dispatch(ctx context.Context, args []string, log *zap.Logger) error {
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], log)
		}
	}
	fmt.Fprintf(os.Stderr, "evaluate: unknown task %q\n\n", args[0])
	usage(os.Stderr)
	return cli.ErrUsage
}

var (
	// errParsed ends a task whose command line parsed, under a context marked parse-only (Check).
	errParsed = errors.New("command line parsed")
)

// parseOnlyKey marks a context under which a task stops once its command line has parsed (Check).
type parseOnlyKey struct{}

// newFlags makes a task's flag set with a usage text.
func newFlags(name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: evaluate %s %s\n\n%s\n\nflags:\n", name, synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses a task's flags, before or after its arguments, and returns the arguments (report's folders;
// the other tasks take none). Under a parse-only context (Check) it prints nothing and returns errParsed once
// they parse.
func parse(ctx context.Context, fs *flag.FlagSet, args []string) ([]string, error) {
	parseOnly := ctx.Value(parseOnlyKey{}) != nil
	if parseOnly {
		fs.SetOutput(io.Discard)
	}
	positional, err := cli.Parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	if len(positional) > 0 && fs.Name() != "report" {
		return nil, fmt.Errorf("unexpected arguments %q (see --help)", strings.Join(positional, " "))
	}
	if parseOnly {
		return nil, errParsed
	}
	return positional, nil
}
