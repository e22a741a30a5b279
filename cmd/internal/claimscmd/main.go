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
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"convrep/claims"
	"convrep/internal/cli"
)

// parser parses a subcommand's arguments (after its name) and returns its work; usage and flag errors are
// printed to stderr, the usage asked for to e.stdout (flag.ErrHelp).
type parser func(e *env, args []string, stderr io.Writer) (func() error, error)

// env is what a subcommand writes to and reads the clock from; tests replace them.
type env struct {
	stdout, stderr io.Writer
	now            func() time.Time
}

var table = cli.Table[parser]{
	Name:     "claims",
	Synopsis: "claims COMMAND [flags]",
	Footer:   "Run 'claims COMMAND --help' for the command's flags.",
	Entries: []cli.Entry[parser]{
		{Name: "check", Summary: "validate a claims spec (models, rows, relations, ids) without reading results", Sub: parseCheck},
		{Name: "report", Summary: "write the claims report (Markdown and JSON) from a spec and the results under the runs root", Sub: parseReport},
	},
}

// Main runs claims on args, the command line after the command's name, and returns the exit status: 0, 1 for
// a failure, 2 for a command line that does not parse.
func Main(args []string) int {
	return command(&env{stdout: os.Stdout, stderr: os.Stderr, now: time.Now}, args).Main(args)
}

// Check parses args as Main does, the command and its flags, and returns what it would reject, without reading
// a spec or a result.
func Check(args []string) error {
	return command(&env{stdout: io.Discard, stderr: io.Discard, now: time.Now}, args).Check(args)
}

// run is Main with its streams and clock given.
func run(args []string, e *env) int {
	return command(e, args).Exec(args, e.stderr, zap.NewNop())
}

// command is claims' command line: the subcommand args[0] parses the rest; a failure is reported under its name.
func command(e *env, args []string) cli.Command[func() error] {
	name := "claims"
	if len(args) > 0 {
		name += " " + args[0]
	}
	return cli.Command[func() error]{Name: name,
		Parse: func(args []string, stderr io.Writer) (func() error, error) {
			c, rest, err := table.Lookup(args, e.stdout, stderr)
			if err != nil {
				return nil, err
			}
			return c.Sub(e, rest, stderr)
		},
		Run: func(_ context.Context, do func() error, _ *zap.Logger) error { return do() },
	}
}

// newFlags makes a command's flag set with a usage text, printing to stderr (e.stdout for --help).
func newFlags(e *env, stderr io.Writer, args []string, name, synopsis, about string) *flag.FlagSet {
	fs := cli.NewFlags("claims "+name, "claims "+name+" "+synopsis, about+"\n", stderr)
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(e.stdout) // asked for: the usage is the output, not an error
		}
	}
	return fs
}

const defaultSpec = "scripts/claims.toml"

func parseCheck(e *env, args []string, stderr io.Writer) (func() error, error) {
	fs := newFlags(e, stderr, args, "check", "[--spec "+defaultSpec+"]",
		"Validates a claims spec without reading any result: unknown keys, ids unique and safe as folder names, models\n"+
			"and row labels that comparisons name defined, relations \">\" or \">=\". Prints a line and exits 0 when it is\n"+
			"valid; lists every problem, one a line, and exits 1 otherwise.")
	spec := fs.String("spec", defaultSpec, "the claims spec (TOML)")
	if err := cli.NoArgs(fs, args); err != nil {
		return nil, err
	}
	return func() error { return check(e, *spec) }, nil
}

// check validates the spec and says so.
func check(e *env, spec string) error {
	s, err := claims.ReadSpec(spec)
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
	fmt.Fprintf(e.stdout, "%s: %d claim(s), %d comparison(s): valid\n", spec, len(s.Claims), n)
	return nil
}

func parseReport(e *env, args []string, stderr io.Writer) (func() error, error) {
	fs := newFlags(e, stderr, args, "report", "[--spec "+defaultSpec+"] [--runs runs/claims] [--output RUNS/report.md]",
		"Reads every claim's results, RUNS/<claim id>/eval/<model>/s<N>/*.json (suite.json skipped), and its stage\n"+
			"times, RUNS/<claim id>/stages.tsv, and writes the report: per claim a table of mean ± std over training seeds\n"+
			"in percent, the comparisons with their effect sizes (Cohen's d) and verdicts, the claim's verdict and wall\n"+
			"time. The same data go to a JSON file beside the Markdown (report.md → report.json). Missing results make\n"+
			"the claim incomplete; the report is written all the same.")
	spec := fs.String("spec", defaultSpec, "the claims spec (TOML)")
	runs := fs.String("runs", "runs/claims", "the runs root: a folder per claim id")
	output := fs.String("output", "", "the Markdown report (default RUNS/report.md); its .json twin is written beside it")
	if err := cli.NoArgs(fs, args); err != nil {
		return nil, err
	}
	if *output == "" {
		*output = filepath.Join(*runs, "report.md")
	}
	return func() error {
		return report(e, *spec, *runs, *output, commandLine(append([]string{"claims", "report"}, args...)))
	}, nil
}

// report builds the report of the spec from the results under runs, writes it to output (and its JSON twin)
// and prints each claim's verdict; command is the command line the report says made it.
func report(e *env, spec, runs, output, command string) error {
	s, err := claims.ReadSpec(spec)
	if err != nil {
		return err
	}
	r, err := claims.Build(s, claims.Options{Runs: runs, Command: command, Generated: e.now()})
	if err != nil {
		return err
	}
	jsonPath, err := r.Write(output)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s and %s\n", output, jsonPath)
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
