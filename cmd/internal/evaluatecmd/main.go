// Package evaluatecmd is the evaluate command (cmd/evaluate, convrep evaluate): it runs the tasks of convrep's
// evaluation suite (DSE §4.2 and Appendix B, and the other papers' evaluations; the library is package
// evaluate/suite) on any model convrep can load:
//
//	go run ./cmd/evaluate TASK --model M [flags]     (go run ./cmd/evaluate --help lists the tasks)
//	go run ./cmd/evaluate TASK --help                (a task's flags)
//
// --model is a convrep run folder, a model folder, a hub name, or an experiment file (.toml; package
// modelref), which means its backbone before training: the untrained baseline, built from the same files or
// the same seeded initialisation. Every task writes a JSON file of rows (model, dataset, task, metric, mean,
// std, seeds, settings) and a Markdown table beside it; docs/evaluation.md shows each task's command line.
//
// The tasks are whatever package suite registers (suite.All): this command lists them (a cli.Table), gives
// each its flag set from its options (Options.Flags), parses the command line into them and runs them. It
// names no task; a task is added in one file of package suite (docs/evaluation.md, "Adding an evaluation
// task").
package evaluatecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"

	"go.uber.org/zap"

	"convrep/evaluate/suite"
	"convrep/internal/cli"
)

// tasks is evaluate's task table: every task package suite registers.
func tasks() cli.Table[suite.Task] {
	t := cli.Table[suite.Task]{Name: "evaluate", Synopsis: "evaluate TASK [flags]   (evaluate TASK --help for the task's flags)", Noun: "task"}
	for _, task := range suite.All() {
		t.Entries = append(t.Entries, cli.Entry[suite.Task]{Name: task.Name, Summary: task.Summary, Sub: task})
	}
	return t
}

// Main runs evaluate on args, the command line after the command's name, and returns the exit status: 0, 1 for
// a failure, 2 for a command line that does not parse.
func Main(args []string) int { return evaluateCommand.Main(args) }

var evaluateCommand = cli.Command[[]string]{Name: "evaluate", Parse: parseTask, Run: runTask, Interruptible: true}

// parseTask wants a task's name first; the task parses its own flags when it runs.
func parseTask(args []string, stderr io.Writer) ([]string, error) {
	if _, _, err := tasks().Lookup(args, os.Stdout, stderr); err != nil {
		return nil, err
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
	return tasks().Check(args, func(t suite.Task, rest []string) error {
		_, _, err := parse(t, rest, io.Discard)
		return cli.Checked(err)
	})
}

// dispatch runs the task args[0] with the flags that follow it.
func dispatch(ctx context.Context, args []string, log *zap.Logger) error {
	e, rest, err := tasks().Lookup(args, os.Stdout, os.Stderr)
	if err != nil {
		return err
	}
	o, f, err := parse(e.Sub, rest, os.Stderr)
	if err != nil {
		return err
	}
	if err := f.Finish(); err != nil {
		return err
	}
	return o.Run(ctx, log)
}

// parse makes the task's options and flag set and parses args, flags before or after the arguments, into
// them; usage and flag errors go to out. A command line that does not parse is cli.ErrUsage (flag.ErrHelp for
// --help).
func parse(t suite.Task, args []string, out io.Writer) (suite.Options, *suite.Flags, error) {
	fs := cli.NewFlags(t.Name, "evaluate "+t.Name+" "+t.Synopsis, t.About+"\n\nreads: "+t.Data+"\n", out)
	o, f := t.New(), suite.NewFlags(fs)
	o.Flags(f)
	positional, err := cli.Parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, nil, err
	case err != nil:
		return nil, nil, fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	if err := f.SetArgs(positional); err != nil {
		return nil, nil, err
	}
	return o, f, nil
}
