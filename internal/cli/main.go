package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
)

// A Command is the skeleton every command of convrep shares, O being its parsed command line: parse, --help,
// the logger, the signals, the failure report and the exit status are here, the command's own work in Run.
type Command[O any] struct {
	Name string // as the failure report names it: "train", "embed"
	// Parse parses the command line after the command's name; usage and flag errors are printed to stderr.
	// It returns flag.ErrHelp for -h / --help.
	Parse func(args []string, stderr io.Writer) (O, error)
	// Run does the command's work.
	Run func(ctx context.Context, o O, log *zap.Logger) error
	// Interruptible: SIGINT and SIGTERM cancel Run's ctx, and Run stops cleanly. Otherwise they end the
	// process at once, as they do any program (for a Run that does not watch ctx).
	Interruptible bool
}

// ErrUsage is a command line that did not parse, found by Run (a dispatcher parses its subcommand's flags there):
// the exit status is 2, and the parser has printed why.
var ErrUsage = errors.New("bad command line")

// Main runs the command on args, the command line after its name, and returns the exit status: 0; 2 for a
// command line that does not parse (0 for --help); 1 for a failure, which Fail reports on stderr.
func (c Command[O]) Main(args []string) int {
	o, err := c.Parse(args, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2
	}
	log := newLogger()
	defer log.Sync()
	return c.run(o, os.Stderr, log)
}

// Exec is Main with the standard error and the logger given, for tests. A failure is logged and, to a stderr
// that is not a file, also written as the plain lines a terminal shows.
func (c Command[O]) Exec(args []string, stderr io.Writer, log *zap.Logger) int {
	o, err := c.Parse(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2
	}
	return c.run(o, stderr, log)
}

// run runs the parsed command line o and returns the exit status.
func (c Command[O]) run(o O, stderr io.Writer, log *zap.Logger) int {
	ctx := context.Background()
	if c.Interruptible {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	err := c.Run(ctx, o, log)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp): // a subcommand's --help (evaluate TASK --help)
		return 0
	case errors.Is(err, ErrUsage): // a subcommand's command line did not parse; its parser said why
		return 2
	}
	if f, ok := stderr.(*os.File); ok {
		Fail(f, log, c.Name, err)
	} else {
		log.Error(c.Name+" failed", zap.Error(err))
		writePlain(stderr, c.Name, err) // a writer that is no file (a test's buffer) is read as a terminal is too
	}
	return 1
}

// Check parses args as Main does and returns what it would reject (nothing for --help), without running the
// command.
func (c Command[O]) Check(args []string) error {
	_, err := c.Parse(args, io.Discard)
	return Checked(err)
}
