package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string // substrings wanted, "" for empty output
	}{
		{args: nil, code: 2, stderr: "usage: convrep <command>"},
		{args: []string{"--help"}, code: 0, stdout: "  train     train what an experiment file names"},
		{args: []string{"-h"}, code: 0, stdout: "  setup     "},
		{args: []string{"help"}, code: 0, stdout: "  evaluate  "},
		{args: []string{"trian", "x.toml"}, code: 2,
			stderr: `convrep: unknown command "trian"; the commands are train, evaluate, embed, serve, data, bench, claims, device, setup`},
		{args: []string{"help", "nope"}, code: 2, stderr: `convrep help: unknown command "nope"`},
		{args: []string{"evaluate", "--help"}, code: 0},
		{args: []string{"claims", "nosuch"}, code: 2},
	} {
		var stdout, stderr strings.Builder
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || (tc.stdout == "") != (stdout.Len() == 0) ||
			!strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("convrep %q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, stdout.String(), stderr.String(),
				tc.code, tc.stdout, tc.stderr)
		}
	}
}

// Every subcommand answers --help with exit 0, and rejects an unknown flag in its parse-only check.
func TestSubcommandsHelpAndCheck(t *testing.T) {
	for _, e := range commands().Entries {
		c := e.Sub
		args := []string{"--nosuchflag"}
		if e.Name == "evaluate" || e.Name == "data" || e.Name == "claims" {
			args = []string{"nosuchcommand"}
		}
		if err := c.check(args); err == nil {
			t.Errorf("%s: check accepted %q", e.Name, args)
		}
		if err := c.check([]string{"--help"}); err != nil {
			t.Errorf("%s: check --help: %v", e.Name, err)
		}
	}
}
