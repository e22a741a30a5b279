// Package claimscmd is the claims command (cmd/claims, convrep claims): it checks papers' claims against the
// results cmd/evaluate wrote for the models trained to test them, and writes the verdicts as a Markdown report with a JSON copy:
//
//	go run ./cmd/claims check  --spec scripts/claims.toml
//	go run ./cmd/claims report --spec scripts/claims.toml --runs runs/claims --output runs/claims/report.md
//
// The spec lists the claims (see package convrep/claims); the results lie under the runs root as
// <claim id>/eval/<model>/s<N>/*.json, with the claim's stage times in <claim id>/stages.tsv. A report with
// results still missing is written all the same, its claims marked incomplete, so a script can rerun it as
// its stages finish.
package claimscmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"convrep/claims"
	"convrep/internal/cli"
)

// command is one subcommand: its flags and what it does with them.
type command struct {
	name, summary string
	run           func(e *env, args []string) error
}

// env is what a subcommand writes to and reads the clock from; tests replace them.
type env struct {
	stdout, stderr io.Writer
	now            func() time.Time
	// parseOnly stops a subcommand once its command line has parsed (Check): parse returns errParsed.
	parseOnly bool
}

func commands() []command {
	return []command{
		{"check", "validate a claims spec (models, rows, relations, ids) without reading results", runCheck},
		{"report", "write the claims report (Markdown and JSON) from a spec and the results under the runs root", runReport},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: claims COMMAND [flags]   (claims COMMAND --help for the command's flags)\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}

// Main runs claims on args, the command line after the command's name, and returns the exit status.
func Main(args []string) int {
	return run(args, &env{stdout: os.Stdout, stderr: os.Stderr, now: time.Now})
}

// Check parses args as Main does, the command and its flags, and returns what it would reject, without reading
// a spec or a result.
func Check(args []string) error {
	var stderr strings.Builder
	e := &env{stdout: io.Discard, stderr: &stderr, now: time.Now, parseOnly: true}
	if len(args) == 0 {
		return errors.New("no command")
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		return nil
	}
	switch err := dispatch(e, args); {
	case err == nil, errors.Is(err, errParsed), errors.Is(err, flag.ErrHelp):
		return nil
	case errors.Is(err, errUsage):
		msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		return errors.New(msg)
	default:
		return err
	}
}

// run runs the command line args and returns the exit status: 0, 2 for a command line that could not be
// parsed, 1 for any other failure (printed plainly on stderr).
func run(args []string, e *env) int {
	if len(args) < 1 {
		usage(e.stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stdout)
		return 0
	}
	err := dispatch(e, args)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	lines := strings.Split(strings.TrimRight(err.Error(), "\n"), "\n")
	fmt.Fprintf(e.stderr, "claims %s: %s\n", args[0], lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintf(e.stderr, "  %s\n", l)
	}
	return 1
}

// dispatch runs the command args[0] with the flags that follow it.
func dispatch(e *env, args []string) error {
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(e, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "claims: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return errUsage
}

var (
	// errUsage reports a command line that could not be parsed (what was wrong has been printed).
	errUsage = errors.New("bad command line")
	// errParsed ends a subcommand whose command line parsed, under env.parseOnly.
	errParsed = errors.New("command line parsed")
)

// newFlags makes a command's flag set with a usage text, printing to e.stderr (e.stdout for --help).
func newFlags(e *env, name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: claims %s %s\n\n%s\n\nflags:\n", name, synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses a command's flags; the commands take no arguments.
func parse(e *env, fs *flag.FlagSet, args []string) error {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(e.stdout) // asked for: the usage is the output, not an error
		}
	}
	positional, err := cli.Parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if len(positional) > 0 {
		fmt.Fprintf(e.stderr, "claims %s: unexpected arguments %q (see --help)\n", fs.Name(), strings.Join(positional, " "))
		return errUsage
	}
	if e.parseOnly {
		return errParsed
	}
	return nil
}

const defaultSpec = "scripts/claims.toml"

func runCheck(e *env, args []string) error {
	fs := newFlags(e, "check", "[--spec "+defaultSpec+"]",
		"Validates a claims spec without reading any result: unknown keys, ids unique and safe as folder names, models\n"+
			"and row labels that comparisons name defined, relations \">\" or \">=\". Prints a line and exits 0 when it is\n"+
			"valid; lists every problem, one a line, and exits 1 otherwise.")
	spec := fs.String("spec", defaultSpec, "the claims spec (TOML)")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	s, err := claims.ReadSpec(*spec)
	if err != nil {
		return err
	}
	n := 0
	for i := range s.Claims {
		c := &s.Claims[i]
		for _, cmp := range c.Compares {
			n += len(c.CompareRows(cmp))
		}
	}
	fmt.Fprintf(e.stdout, "%s: %d claim(s), %d comparison(s): valid\n", *spec, len(s.Claims), n)
	return nil
}

func runReport(e *env, args []string) error {
	fs := newFlags(e, "report", "[--spec "+defaultSpec+"] [--runs runs/claims] [--output RUNS/report.md]",
		"Reads every claim's results, RUNS/<claim id>/eval/<model>/s<N>/*.json (suite.json skipped), and its stage\n"+
			"times, RUNS/<claim id>/stages.tsv, and writes the report: per claim a table of mean ± std over training seeds\n"+
			"in percent, the comparisons with their effect sizes (Cohen's d) and verdicts, the claim's verdict and wall\n"+
			"time. The same data go to a JSON file beside the Markdown (report.md → report.json). Missing results make\n"+
			"the claim incomplete; the report is written all the same.")
	spec := fs.String("spec", defaultSpec, "the claims spec (TOML)")
	runs := fs.String("runs", "runs/claims", "the runs root: a folder per claim id")
	output := fs.String("output", "", "the Markdown report (default RUNS/report.md); its .json twin is written beside it")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if *output == "" {
		*output = filepath.Join(*runs, "report.md")
	}
	s, err := claims.ReadSpec(*spec)
	if err != nil {
		return err
	}
	r, err := claims.Build(s, claims.Options{Runs: *runs, Command: commandLine(append([]string{"claims", "report"}, args...)), Generated: e.now()})
	if err != nil {
		return err
	}
	jsonPath, err := r.Write(*output)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s and %s\n", *output, jsonPath)
	for _, c := range r.Claims {
		fmt.Fprintf(e.stdout, "  %s: %s (%d of %d comparisons hold)\n", c.ID, c.Verdict, c.Held, c.Total)
	}
	return nil
}

// commandLine joins args as a shell would read them back, quoting those with spaces or quotes.
func commandLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`|&;<>()*?[]#~") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
