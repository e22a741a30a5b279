package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The table's answer to each shape of command line: its exit status, what it writes where, what its check
// says, and what the subcommand is given.
func TestTable(t *testing.T) {
	table := Table[string]{
		Name: "tool", Synopsis: "tool <command> [flags]", About: "Does two things.", Footer: "Run 'tool help <command>'.",
		Entries: []Entry[string]{
			{"convert", "write the corpora as one file", "C"},
			{"stats", "count them", "S"},
		},
	}
	// sub runs a subcommand: its exit status is 0, or 1 for an argument "fail"; --help is 0.
	var got []string
	sub := func(s string, args []string) int {
		got = append([]string{s}, args...)
		if slices.Contains(args, "fail") {
			return 1
		}
		return 0
	}
	check := func(s string, args []string) error {
		if slices.Contains(args, "--nope") {
			return errors.New("flag provided but not defined: -nope")
		}
		return nil
	}
	usage := "usage: tool <command> [flags]\n\nDoes two things.\n\ncommands:\n" +
		"  convert  write the corpora as one file\n  stats    count them\n\nRun 'tool help <command>'.\n"
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string   // exactly, or with "~" first: a substring
		sub            []string // what the subcommand was given, nil when it did not run
		check          string   // the check's error, "" for none
	}{
		{args: nil, code: 2, stderr: usage, check: "no command"},
		{args: []string{"--help"}, code: 0, stdout: usage},
		{args: []string{"-h"}, code: 0, stdout: usage},
		{args: []string{"-help"}, code: 0, stdout: usage},
		{args: []string{"help"}, code: 0, stdout: usage},
		{args: []string{"help", "stats"}, code: 0, sub: []string{"S", "--help"}},
		{args: []string{"help", "stat"}, code: 2,
			stderr: "tool help: unknown command \"stat\"; the commands are convert, stats; did you mean \"stats\"?\n",
			check:  `unknown command "stat"; the commands are convert, stats; did you mean "stats"?`},
		{args: []string{"stats"}, code: 0, sub: []string{"S"}},
		{args: []string{"convert", "--out", "x", "fail"}, code: 1, sub: []string{"C", "--out", "x", "fail"}},
		{args: []string{"convert", "--nope"}, code: 0, sub: []string{"C", "--nope"}, check: "flag provided but not defined: -nope"},
		{args: []string{"covnert", "--out", "x"}, code: 2,
			stderr: "tool: unknown command \"covnert\"; the commands are convert, stats; did you mean \"convert\"?\n" +
				"Run 'tool --help' for what each does.\n",
			check: `unknown command "covnert"; the commands are convert, stats; did you mean "convert"?`},
		{args: []string{"frobnicate"}, code: 2, stderr: `~tool: unknown command "frobnicate"; the commands are convert, stats` + "\n",
			check: `unknown command "frobnicate"; the commands are convert, stats`},
		{args: []string{"--stats"}, code: 2, stderr: `~unknown command "--stats"`,
			check: `unknown command "--stats"; the commands are convert, stats; did you mean "stats"?`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			got = nil
			code := table.Main(tc.args, &stdout, &stderr, sub)
			if code != tc.code || !slices.Equal(got, tc.sub) {
				t.Errorf("exit %d, ran %q; want %d, %q", code, got, tc.code, tc.sub)
			}
			for _, w := range []struct {
				name, got, want string
			}{{"stdout", stdout.String(), tc.stdout}, {"stderr", stderr.String(), tc.stderr}} {
				if sub, ok := strings.CutPrefix(w.want, "~"); ok && !strings.Contains(w.got, sub) || !ok && w.got != w.want {
					t.Errorf("%s %q, want %q", w.name, w.got, w.want)
				}
			}
			err := table.Check(tc.args, check)
			if fmt.Sprint(err) != tc.check && !(err == nil && tc.check == "") {
				t.Errorf("Check: %v, want %q", err, tc.check)
			}
			if err != nil && tc.code == 2 && !errors.Is(err, ErrUsage) {
				t.Errorf("Check: %v is not ErrUsage", err)
			}
		})
	}
}

// The noun names a table's subcommands in its usage and its errors (evaluate's tasks).
func TestTableNoun(t *testing.T) {
	table := Table[int]{Name: "evaluate", Synopsis: "evaluate TASK [flags]", Noun: "task",
		Entries: []Entry[int]{{"intent", "few-shot intent", 1}, {"finetune-response", "fine-tuned response selection", 2}}}
	var b strings.Builder
	table.Usage(&b)
	want := "usage: evaluate TASK [flags]\n\ntasks:\n  intent             few-shot intent\n  finetune-response  fine-tuned response selection\n"
	if b.String() != want {
		t.Errorf("usage %q, want %q", b.String(), want)
	}
	if _, err := table.Find("intnet"); err == nil || err.Error() != `unknown task "intnet"; the tasks are intent, finetune-response; did you mean "intent"?` {
		t.Errorf("Find: %v", err)
	}
	if e, err := table.Find("finetune-response"); err != nil || e.Sub != 2 {
		t.Errorf("Find: %v, %v", e, err)
	}
}
