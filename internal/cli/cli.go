// Package cli is the command line as people type it: flags before or after the positional arguments, and a
// failure printed as plain lines on a terminal (structured for files and pipes).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/term"
)

// Parse parses args with fs, taking flags wherever they stand among the positional arguments
// (`train x.toml --set a=b --resume` as well as `train --resume x.toml`), as GNU tools and Cobra do; "--" ends
// the flags, and what follows it is positional even if it starts with a dash. It returns the positional
// arguments in order. Errors are fs's (flag.ErrHelp for -h / --help).
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		// fs stopped at the first non-flag, or after "--" (which it consumed): tell them apart.
		consumed := args[:len(args)-len(rest)]
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// NewFlags is a command's flag set, writing to out: --help prints "usage: " and synopsis, then about (a
// paragraph of lines, each ending in a newline) and the flags.
func NewFlags(name, synopsis, about string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\n%s\nflags:\n", synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// NoArgs parses args with fs as Parse does, for a command that takes flags only: a positional argument is
// an error naming it.
func NoArgs(fs *flag.FlagSet, args []string) error {
	rest, err := Parse(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments %q (see --help)\n", fs.Name(), rest)
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	return nil
}

// Repeated is a flag given any number of times (--set a=1 --set b=2), its values in order.
type Repeated []string

func (r *Repeated) String() string     { return strings.Join(*r, ", ") }
func (r *Repeated) Set(v string) error { *r = append(*r, v); return nil }

// Checked is what a command's parse-only check makes of its parse error: --help is no error.
func Checked(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// IsTerminal reports whether f is a terminal; tests replace it.
var IsTerminal = func(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// Fail reports a command's fatal error. On a terminal it prints "command: " and the error's text as plain
// lines, so that multi-line messages (remedies, one line per problem) read as written; to a file or a pipe
// it logs a structured line with the error as a field, for log tools.
func Fail(stderr *os.File, log *zap.Logger, command string, err error) {
	if IsTerminal(stderr) {
		writePlain(stderr, command, err)
		return
	}
	log.Error(command+" failed", zap.Error(err))
}

// writePlain writes "command: " + err's text, continuation lines indented under the first.
func writePlain(w io.Writer, command string, err error) {
	lines := strings.Split(strings.TrimRight(err.Error(), "\n"), "\n")
	fmt.Fprintf(w, "%s: %s\n", command, lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintf(w, "  %s\n", l)
	}
}
