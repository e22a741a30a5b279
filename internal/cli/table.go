package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"convrep/internal/settings"
)

// A Table is a command's subcommands (convrep's verbs, claims' and data's commands, evaluate's tasks), S being
// what the command keeps for each (its runner, its flags). The table reads the command line's first word: no
// word, --help, `help SUB`, an unknown name; the subcommand parses the rest.
type Table[S any] struct {
	Name     string // the command, as the messages name it: "convrep", "claims", "data"
	Synopsis string // the usage line after "usage: ": "convrep <command> [arguments]"
	About    string // what the command is for, printed under the usage line; may be empty
	Noun     string // what a subcommand is called: "command" when empty, "task"
	Footer   string // a line after the list, such as where each subcommand's flags are; may be empty
	Entries  []Entry[S]
}

// An Entry is one subcommand of a Table.
type Entry[S any] struct {
	Name, Summary string
	Sub           S
}

// usageError is a command line the table rejects; it reads as ErrUsage to errors.Is (exit status 2).
type usageError string

func (e usageError) Error() string        { return string(e) }
func (e usageError) Is(target error) bool { return target == ErrUsage }

func (t Table[S]) noun() string {
	if t.Noun == "" {
		return "command"
	}
	return t.Noun
}

// Names lists the subcommands in the table's order.
func (t Table[S]) Names() []string {
	names := make([]string, len(t.Entries))
	for i, e := range t.Entries {
		names[i] = e.Name
	}
	return names
}

// Find returns the subcommand called name; its error names the valid ones, and the nearest when name looks
// like a slip of the fingers.
func (t Table[S]) Find(name string) (Entry[S], error) {
	for _, e := range t.Entries {
		if e.Name == name {
			return e, nil
		}
	}
	msg := fmt.Sprintf("unknown %s %q; the %ss are %s", t.noun(), name, t.noun(), strings.Join(t.Names(), ", "))
	if near, ok := settings.Nearest(name, t.Names()); ok {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return Entry[S]{}, usageError(msg)
}

// Usage writes the command's usage: the synopsis, what it is for, and one line per subcommand.
func (t Table[S]) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n", t.Synopsis)
	if t.About != "" {
		fmt.Fprintf(w, "%s\n\n", strings.TrimRight(t.About, "\n"))
	}
	width := 0
	for _, e := range t.Entries {
		width = max(width, len(e.Name))
	}
	fmt.Fprintf(w, "%ss:\n", t.noun())
	for _, e := range t.Entries {
		fmt.Fprintf(w, "  %-*s  %s\n", width, e.Name, e.Summary)
	}
	if t.Footer != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(t.Footer, "\n"))
	}
}

// isHelp reports whether a word asks for the usage.
func isHelp(word string) bool {
	return word == "-h" || word == "-help" || word == "--help" || word == "help"
}

// Lookup reads the command line args (after the command's name) and returns the subcommand it names and the
// arguments that follow that name. The usage asked for (-h, --help, help) is written to stdout and the error
// is flag.ErrHelp; `help SUB` is SUB with --help. A command line that names no subcommand, or one that is not
// in the table, is reported on stderr and the error is ErrUsage (errors.Is), its text saying why.
func (t Table[S]) Lookup(args []string, stdout, stderr io.Writer) (Entry[S], []string, error) {
	if len(args) == 0 {
		t.Usage(stderr)
		return Entry[S]{}, nil, usageError("no " + t.noun())
	}
	if isHelp(args[0]) {
		if args[0] != "help" || len(args) == 1 {
			t.Usage(stdout)
			return Entry[S]{}, nil, flag.ErrHelp
		}
		e, err := t.Find(args[1])
		if err != nil {
			fmt.Fprintf(stderr, "%s help: %v\n", t.Name, err)
			return Entry[S]{}, nil, err
		}
		return e, []string{"--help"}, nil
	}
	e, err := t.Find(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for what each does.\n", t.Name, err, t.Name)
		return Entry[S]{}, nil, err
	}
	return e, args[1:], nil
}

// Main runs the command line args (after the command's name) with run, which runs a subcommand on its
// arguments and returns its exit status; the table's own exit status is 0 for the usage asked for and 2 for a
// command line that names no subcommand it has.
func (t Table[S]) Main(args []string, stdout, stderr io.Writer, run func(sub S, args []string) int) int {
	e, rest, err := t.Lookup(args, stdout, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2
	}
	return run(e.Sub, rest)
}

// Check parses args as Main would, without running anything (the docs' test): the subcommand's name by the
// table, its arguments by check. It returns what Main would reject; --help is no error.
func (t Table[S]) Check(args []string, check func(sub S, args []string) error) error {
	e, rest, err := t.Lookup(args, io.Discard, io.Discard)
	if err != nil {
		return Checked(err)
	}
	return check(e.Sub, rest)
}
