package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		positional []string
		sets       []string
		resume     bool
		n          int
		err        string
	}{
		{args: []string{"x.toml"}, positional: []string{"x.toml"}, n: 1},
		{args: []string{"--resume", "x.toml"}, positional: []string{"x.toml"}, resume: true, n: 1},
		{args: []string{"x.toml", "--set", "train.lr=1e-5"}, positional: []string{"x.toml"}, sets: []string{"train.lr=1e-5"}, n: 1},
		{args: []string{"x.toml", "--resume"}, positional: []string{"x.toml"}, resume: true, n: 1},
		{args: []string{"--set=a=1", "x.toml", "-set", "b=2", "--n", "3", "y"}, positional: []string{"x.toml", "y"}, sets: []string{"a=1", "b=2"}, n: 3},
		{args: []string{"--resume=false", "x.toml", "--", "--x", "-n"}, positional: []string{"x.toml", "--x", "-n"}, n: 1},
		{args: []string{"--", "--resume"}, positional: []string{"--resume"}, n: 1},
		{args: []string{"x.toml", "--nope"}, err: "flag provided but not defined: -nope"},
		{args: []string{"x.toml", "--n"}, err: "flag needs an argument"},
		{args: []string{"x.toml", "--help"}, err: flag.ErrHelp.Error()},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var sets Repeated
		fs.Var(&sets, "set", "")
		resume := fs.Bool("resume", false, "")
		n := fs.Int("n", 1, "")
		pos, err := Parse(fs, tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(pos, tc.positional) || !slices.Equal(sets, tc.sets) || *resume != tc.resume || *n != tc.n {
			t.Errorf("%q: positional %q sets %q resume %v n %d (%v); want %q %q %v %d", tc.args, pos, sets, *resume, *n, err,
				tc.positional, tc.sets, tc.resume, tc.n)
		}
	}
}

func TestNoArgs(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		err, says string // the error, and what the command line is told
	}{
		{args: []string{"--n", "3"}},
		{args: []string{"--n", "3", "x.toml"}, err: `unexpected arguments ["x.toml"]`, says: `tool: unexpected arguments ["x.toml"] (see --help)`},
		{args: []string{"--", "-n"}, err: `unexpected arguments ["-n"]`},
		{args: []string{"--help"}, err: flag.ErrHelp.Error(), says: "usage: tool [--n N]\n\nDoes one thing.\n\nflags:\n  -n int"},
	} {
		var out bytes.Buffer
		fs := NewFlags("tool", "tool [--n N]", "Does one thing.\n", &out)
		fs.Int("n", 1, "")
		err := NoArgs(fs, tc.args)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != tc.err) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
		}
		if !strings.Contains(out.String(), tc.says) {
			t.Errorf("%q: said %q, want %q in it", tc.args, out.String(), tc.says)
		}
	}
}

// On a terminal a multi-line error reads as written; to a file it is one structured log line.
func TestFail(t *testing.T) {
	err := errors.New("model.backbone: bert-base-uncased is not in the cache\nremedies:\n  1. copy it \"here\"")
	defer func(f func(*os.File) bool) { IsTerminal = f }(IsTerminal)

	out, _ := os.Create(filepath.Join(t.TempDir(), "stderr"))
	defer out.Close()
	IsTerminal = func(*os.File) bool { return true }
	Fail(out, zap.NewNop(), "train", err)
	b, _ := os.ReadFile(out.Name())
	want := "train: model.backbone: bert-base-uncased is not in the cache\n  remedies:\n    1. copy it \"here\"\n"
	if string(b) != want {
		t.Errorf("terminal: %q, want %q", b, want)
	}

	IsTerminal = func(*os.File) bool { return false }
	var logged bytes.Buffer
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&logged), zapcore.InfoLevel))
	Fail(out, log, "train", err)
	if s := logged.String(); strings.Count(s, "\n") != 1 || !strings.Contains(s, `"msg":"train failed"`) || !strings.Contains(s, `remedies:\n`) {
		t.Errorf("pipe: %q, want one structured line", s)
	}
}

// A command's exit status: 0, 0 for --help, 2 for a command line that does not parse, 1 for a failure.
func TestCommandMain(t *testing.T) {
	defer func(f func(*os.File) bool) { IsTerminal = f }(IsTerminal)
	IsTerminal = func(*os.File) bool { return true }
	c := Command[string]{
		Name: "t",
		Parse: func(args []string, stderr io.Writer) (string, error) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			fail := fs.String("fail", "", "")
			_, err := Parse(fs, args)
			return *fail, err
		},
		Run: func(_ context.Context, fail string, _ *zap.Logger) error {
			switch fail {
			case "":
				return nil
			case "usage": // a dispatcher's subcommand whose flags did not parse
				return fmt.Errorf("sub: %w", ErrUsage)
			case "help": // a dispatcher's subcommand's --help
				return flag.ErrHelp
			}
			return errors.New(fail)
		},
	}
	for _, tc := range []struct {
		args  []string
		code  int
		check bool
	}{
		{nil, 0, true},
		{[]string{"--help"}, 0, true},
		{[]string{"--nope"}, 2, false},
		{[]string{"--fail", "x"}, 1, true},
		{[]string{"--fail", "usage"}, 2, true},
		{[]string{"--fail", "help"}, 0, true},
	} {
		if code := c.Main(tc.args); code != tc.code {
			t.Errorf("%q: exit %d, want %d", tc.args, code, tc.code)
		}
		if err := c.Check(tc.args); (err == nil) != tc.check {
			t.Errorf("%q: Check %v", tc.args, err)
		}
	}
}

// Exec logs a failure and writes it to a stderr that is not a file as the plain lines a terminal shows.
func TestCommandExecPlain(t *testing.T) {
	c := Command[string]{
		Name:  "claims check",
		Parse: func(args []string, _ io.Writer) (string, error) { return strings.Join(args, " "), nil },
		Run: func(_ context.Context, msg string, _ *zap.Logger) error {
			if msg == "" {
				return nil
			}
			return errors.New(msg)
		},
	}
	var stderr, logged bytes.Buffer
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&logged), zapcore.InfoLevel))
	if code := c.Exec([]string{`spec.toml: worse "x"` + "\nis not a model"}, &stderr, log); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if want := "claims check: spec.toml: worse \"x\"\n  is not a model\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if s := logged.String(); !strings.Contains(s, `"msg":"claims check failed"`) || !strings.Contains(s, `is not a model`) {
		t.Errorf("log %q, want the failure", s)
	}
	stderr.Reset()
	if code := c.Exec(nil, &stderr, zap.NewNop()); code != 0 || stderr.Len() != 0 {
		t.Errorf("exit %d, stderr %q; want 0 and nothing", code, stderr.String())
	}
}
