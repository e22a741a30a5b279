package setupcmd

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// The set-up's command line: what Parse makes of it, what Check rejects, and the exit status Main gives one
// that does not run (--help, a command line that does not parse).
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		want   Options
		name   string
		err    string // "" for none, "help" for flag.ErrHelp
		stderr string // in the usage or the error printed
	}{
		{args: nil, want: Options{build: true}, name: "setup"},
		{args: []string{"-force", "--no-install", "--build=false"}, want: Options{force: true, noInstall: true}, name: "setup"},
		{args: []string{"--help"}, err: "help", name: "setup", stderr: "usage: go run ./cmd/setup [flags]"},
		{args: []string{"--nope"}, err: "flag provided but not defined: -nope", name: "setup"},
		{args: []string{"bundle", "--to", "d", "--go"}, want: Options{bundle: true, to: "d", withGo: true}, name: "setup bundle"},
		{args: []string{"bundle", "-h"}, err: "help", name: "setup bundle", stderr: "usage: go run ./cmd/setup bundle --to DIR"},
		{args: []string{"bundle"}, err: "bundle needs --to DIR", name: "setup bundle", stderr: "setup bundle: bundle needs --to DIR"},
		{args: []string{"bundle", "--to", "d", "extra"}, err: "no other arguments", name: "setup bundle"},
	} {
		var stderr strings.Builder
		o, err := Parse(tc.args, &stderr)
		switch {
		case tc.err == "help" && !errors.Is(err, flag.ErrHelp),
			tc.err != "help" && tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)),
			tc.err == "" && (err != nil || o != tc.want):
			t.Errorf("%q: %+v, %v; want %+v, %q", tc.args, o, err, tc.want, tc.err)
		}
		if !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%q: stderr %q, want %q in it", tc.args, stderr.String(), tc.stderr)
		}
		if got := Name(tc.args); got != tc.name {
			t.Errorf("%q: Name %q, want %q", tc.args, got, tc.name)
		}
		if err := Check(tc.args); (err != nil) != (tc.err != "" && tc.err != "help") {
			t.Errorf("%q: Check %v", tc.args, err)
		}
		if tc.err != "" {
			want := map[bool]int{true: 0, false: 2}[tc.err == "help"]
			if code := Main(tc.args); code != want {
				t.Errorf("%q: exit %d, want %d", tc.args, code, want)
			}
		}
	}
}
