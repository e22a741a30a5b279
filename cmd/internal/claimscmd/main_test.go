package claimscmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"convrep/claims"
)

const spec = `
[[claim]]
id = "dse"
title = "DSE beats its backbone"
statement = "DSE > backbone on 1-shot CLINC150"
models = ["backbone", "dse"]
labels = { dse = "DSE" }

  [[claim.row]]
  task = "intent"
  dataset = "clinc150"
  variant = "1-shot"
  metric = "accuracy"
  label = "CLINC150 1-shot"

  [[claim.compare]]
  better = "dse"
  worse = "backbone"
  relation = ">"
`

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fixture writes the spec and two models × two seeds of results; it returns the spec and the runs root.
//
//	dse 0.45, 0.47 → 46.00 ± 1.41; backbone 0.15, 0.17 → 16.00 ± 1.41; d = 0.30/0.0141 = 21.21 → holds
func fixture(t *testing.T) (specPath, runs string) {
	dir := t.TempDir()
	specPath = write(t, filepath.Join(dir, "claims.toml"), spec)
	runs = filepath.Join(dir, "runs")
	for _, r := range []struct {
		model, seed string
		mean        float64
	}{{"dse", "s0", 0.45}, {"dse", "s1", 0.47}, {"backbone", "s0", 0.15}, {"backbone", "s1", 0.17}} {
		write(t, filepath.Join(runs, "dse", "eval", r.model, r.seed, "intent-clinc150.json"), fmt.Sprintf(
			`{"model": %q, "task": "intent", "rows": [{"model": %q, "dataset": "clinc150", "task": "intent", "variant": "1-shot", `+
				`"metric": "accuracy", "mean": %v, "std": 0.01, "seeds": [0, 1], "values": [%v, %v], "settings": {"shots": 1}}]}`,
			r.model, r.model, r.mean, r.mean-0.01, r.mean+0.01))
	}
	write(t, filepath.Join(runs, "dse", "stages.tsv"), "train\t61\tdone\n")
	return specPath, runs
}

func TestRun(t *testing.T) {
	specPath, runs := fixture(t)
	badSpec := write(t, filepath.Join(t.TempDir(), "bad.toml"), strings.Replace(spec, `worse = "backbone"`, `worse = "simcse"`, 1))
	brokenRuns := t.TempDir()
	broken := write(t, filepath.Join(brokenRuns, "dse", "eval", "dse", "s0", "intent-clinc150.json"), `{"rows": `)
	out := filepath.Join(t.TempDir(), "out", "claims.md")
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string // substrings
	}{
		{"no command", nil, 2, "", "usage: claims COMMAND"},
		{"help", []string{"--help"}, 0, "usage: claims COMMAND [flags]", ""},
		{"report's help", []string{"report", "--help"}, 0, "usage: claims report [--spec", ""},
		{"check's help", []string{"check", "-h"}, 0, "-spec string", ""},
		{"unknown command", []string{"verify"}, 2, "", `claims: unknown command "verify"`},
		{"unknown flag", []string{"report", "--spec", specPath, "--out", "x"}, 2, "", "flag provided but not defined: -out"},
		{"an argument", []string{"check", specPath}, 2, "", "unexpected arguments"},
		{"check", []string{"check", "--spec", specPath}, 0, specPath + ": 1 claim(s), 1 comparison(s): valid", ""},
		{"check a bad spec", []string{"check", "--spec", badSpec}, 1, "",
			`claims check: ` + badSpec + `: claim "dse": compare 1: worse "simcse" is not one of models (backbone, dse)`},
		{"check a spec that is not there", []string{"check", "--spec", filepath.Join(runs, "nope.toml")}, 1, "", "no such file"},
		{"report", []string{"report", "--spec", specPath, "--runs", runs, "--output", out}, 0, "dse: holds (1 of 1 comparisons hold)", ""},
		{"report on a malformed result", []string{"report", "--spec", specPath, "--runs", brokenRuns}, 1, "", "claims report: read " + broken + ": unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &env{stdout: &stdout, stderr: &stderr, now: func() time.Time { return time.Unix(0, 0) }})
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(brokenRuns, "report.md")); err == nil {
		t.Error("a report failed on a malformed result and wrote report.md all the same")
	}
}

func TestReportFiles(t *testing.T) {
	specPath, runs := fixture(t)
	var stdout, stderr bytes.Buffer
	e := &env{stdout: &stdout, stderr: &stderr, now: func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }}
	if code := run([]string{"report", "--spec", specPath, "--runs", runs}, e); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(runs, "report.md")) // the default output
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Generated 2025-01-02 03:04:05 UTC by `claims report --spec " + specPath + " --runs " + runs + "`",
		"| DSE beats its backbone | holds | 1/1 | backbone 2, dse 2 | 0:01:01 |",
		"| backbone | 16.00 ± 1.41 (n=2) |",
		"| DSE | 46.00 ± 1.41 (n=2) |",
		"| DSE | > | backbone | CLINC150 1-shot | +30.00 | 21.21 | holds |",
		"**Verdict: holds** (1 of 1 comparisons hold). Wall time: 0:01:01",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("report.md:\n%s", md)
	}
	data, err := os.ReadFile(filepath.Join(runs, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r claims.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("report.json does not decode: %v", err)
	}
	if len(r.Claims) != 1 || r.Claims[0].Verdict != claims.Holds || r.Claims[0].Comparisons[0].Row != "CLINC150 1-shot" {
		t.Fatalf("report.json: %+v", r)
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"claims", "report", "--runs", "runs/claims"}, "claims report --runs runs/claims"},
		{[]string{"claims", "report", "--runs", "my runs"}, "claims report --runs 'my runs'"},
		{[]string{"claims", "report", "--spec", "it's.toml"}, `claims report --spec 'it'\''s.toml'`},
		{[]string{"claims", "report", "--output", ""}, "claims report --output ''"},
	} {
		if got := commandLine(tc.args); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.args, got, tc.want)
		}
	}
}
