package claims

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// e2eSpec has a claim with results (toy) and one whose models have none yet (later).
const e2eSpec = `
[[claim]]
id = "toy"
title = "Toy claim"
statement = "DSE > base on intent and response selection; DSE >= the ensemble on intent"
notes = "Hand-made numbers."
models = ["base", "ens", "dse"]
labels = { base = "mini base", dse = "DSE" }

  [[claim.row]]
  task = "intent"
  dataset = "clinc150"
  variant = "1-shot"
  metric = "accuracy"
  label = "CLINC 1-shot"

  [[claim.row]]
  task = "response-selection"
  dataset = "amazonqa"
  variant = "100 candidates"
  metric = "top1"
  label = "AmazonQA top-1"

  [[claim.compare]]
  better = "dse"
  worse = "base"
  relation = ">"

  [[claim.compare]]
  better = "dse"
  worse = "ens"
  relation = ">="
  rows = ["CLINC 1-shot"]

[[claim]]
id = "later"
statement = "a > b"
models = ["a", "b"]

  [[claim.row]]
  task = "intent"
  dataset = "clinc150"
  variant = "1-shot"
  metric = "accuracy"

  [[claim.compare]]
  better = "a"
  worse = "b"
  relation = ">"
`

// writeToyRuns writes the toy claim's results: base and dse with 2 seeds each, ens with one, and a
// stages.tsv of 1:02:05.
//
//	CLINC 1-shot:   dse 0.40, 0.44 → 42.00 ± 2.83; base 0.20, 0.24 → 22.00 ± 2.83; ens 0.41 ± 0.02 (splits)
//	                dse > base: +20.00 points, d = 0.2/√0.0008 = 7.07 → holds
//	                dse ≥ ens: +1.00, d = 0.01/√((0.0008+0.0004)/2) = 0.41 → holds (difference ≥ 0)
//	AmazonQA top-1: dse 0.30, 0.32 → 31.00 ± 1.41; base 0.31, 0.29 → 30.00 ± 1.41
//	                dse > base: +1.00, d = 0.01/√0.0002 = 0.71 → inconclusive
func writeToyRuns(t *testing.T, root string) {
	t.Helper()
	eval := filepath.Join(root, "toy", "eval")
	for _, r := range []struct {
		model, seed      string
		clinc, amazon    float64
		clincStd, amzStd float64
	}{
		{"dse", "s0", 0.40, 0.30, 0.01, 0.005},
		{"dse", "s1", 0.44, 0.32, 0.01, 0.005},
		{"base", "s0", 0.20, 0.31, 0.01, 0.005},
		{"base", "s1", 0.24, 0.29, 0.01, 0.005},
	} {
		dir := filepath.Join(eval, r.model, r.seed)
		write(t, filepath.Join(dir, "intent-clinc150.json"), resultJSON(r.model, "intent",
			[5]any{"clinc150", "1-shot", "accuracy", r.clinc, r.clincStd}, [5]any{"clinc150", "5-shot", "accuracy", 0.9, 0.01}))
		write(t, filepath.Join(dir, "response-amazonqa.json"), resultJSON(r.model, "response-selection",
			[5]any{"amazonqa", "100 candidates", "top1", r.amazon, r.amzStd}))
		write(t, filepath.Join(dir, "suite.json"), `{"suite": ["intent", "response"]}`)
	}
	write(t, filepath.Join(eval, "ens", "s0", "intent-clinc150.json"), resultJSON("ens", "intent",
		[5]any{"clinc150", "1-shot", "accuracy", 0.41, 0.02}))
	write(t, filepath.Join(root, "toy", "stages.tsv"), "train-dse\t3600\tdone\neval\t125.4\tdone\n")
}

func TestReportEndToEnd(t *testing.T) {
	root := filepath.Join(t.TempDir(), "runs")
	writeToyRuns(t, root)
	spec, err := ParseSpec("claims.toml", []byte(e2eSpec))
	if err != nil {
		t.Fatal(err)
	}
	generated := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	r, err := Build(spec, Options{Runs: root, Command: "claims report --runs " + root, Generated: generated})
	if err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(root, "report.md")
	jsonPath, err := r.Write(md)
	if err != nil {
		t.Fatal(err)
	}
	if jsonPath != filepath.Join(root, "report.json") {
		t.Errorf("JSON at %s, want report.json beside the Markdown", jsonPath)
	}
	data, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	laterA := filepath.Join(root, "later", "eval", "a")
	for _, want := range []string{
		"# Claims report",
		"Generated 2025-03-04 05:06:07 UTC by `claims report --runs " + root + "`",
		"Cohen's d = (mean_better − mean_worse) / √((s_better² + s_worse²)/2)",
		"holds when d ≥ 0.8",
		"| Toy claim | partly holds | 2/3 | base 2, ens 1, dse 2 | 1:02:05 |",
		"| later | incomplete | 0/1 | a 0, b 0 | unknown |",
		"## Toy claim\n\n**Claim:** DSE > base on intent and response selection; DSE >= the ensemble on intent\n\nHand-made numbers.\n",
		"| model | CLINC 1-shot | AmazonQA top-1 |",
		"| mini base | 22.00 ± 2.83 (n=2) | 30.00 ± 1.41 (n=2) |",
		"| ens | 41.00 ± 2.00† (n=1) | – |",
		"| DSE | 42.00 ± 2.83 (n=2) | 31.00 ± 1.41 (n=2) |",
		"† spread over the evaluation's sampled splits, one trained model.",
		"| DSE | > | mini base | CLINC 1-shot | +20.00 | 7.07 | holds |",
		"| DSE | > | mini base | AmazonQA top-1 | +1.00 | 0.71 | inconclusive |",
		"| DSE | >= | ens | CLINC 1-shot | +1.00 | 0.41 | holds |",
		"**Verdict: partly holds** (2 of 3 comparisons hold). Wall time: 1:02:05 (2 stages in stages.tsv).",
		"| a | > | b | intent clinc150 1-shot accuracy | – | – | missing: a: no results yet: no seed folder s<N> in " + laterA,
		"**Verdict: incomplete** (0 of 1 comparisons hold). Wall time: unknown (no stages.tsv).",
		"- b: no results yet: no seed folder s<N> in " + filepath.Join(root, "later", "eval", "b"),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", text)
	}

	data, err = os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("report.json does not decode: %v", err)
	}
	toy := back.Claims[0]
	if len(back.Claims) != 2 || toy.Verdict != PartlyHolds || toy.Held != 2 || toy.Total != 3 || back.Claims[1].Verdict != Incomplete {
		t.Fatalf("report.json: %+v", back.Claims)
	}
	cell := toy.Models[2].Cells[0]
	if cell.N != 2 || math.Abs(cell.Mean-0.42) > 1e-12 || strings.Join(cell.Seeds, ",") != "s0,s1" {
		t.Errorf("report.json's dse CLINC cell: %+v", cell)
	}
	if d := float64(toy.Comparisons[0].D); math.Abs(d-0.2/math.Sqrt(0.0008)) > 1e-9 {
		t.Errorf("report.json's first d: %v", d)
	}
	if !back.Generated.Equal(generated) || toy.WallTime.Seconds != 3725.4 {
		t.Errorf("report.json: generated %v, wall time %+v", back.Generated, toy.WallTime)
	}
}

// An ablation claim reads the models it names in results from the other claim's folder: the toy claim's dse
// row appears unchanged beside the ablation's own variant.
func TestReportReadsResultsOfAnotherClaim(t *testing.T) {
	root := filepath.Join(t.TempDir(), "runs")
	writeToyRuns(t, root)
	for seed, acc := range map[string]float64{"s0": 0.50, "s1": 0.54} {
		write(t, filepath.Join(root, "toy-ablation", "eval", "variant", seed, "intent-clinc150.json"), resultJSON("variant", "intent",
			[5]any{"clinc150", "1-shot", "accuracy", acc, 0.01}))
	}
	spec, err := ParseSpec("claims.toml", []byte(e2eSpec+`
[[claim]]
id = "toy-ablation"
statement = "the variant > DSE"
models = ["dse", "variant"]
results = { dse = "toy" }

  [[claim.row]]
  task = "intent"
  dataset = "clinc150"
  variant = "1-shot"
  metric = "accuracy"
  label = "CLINC 1-shot"

  [[claim.compare]]
  better = "variant"
  worse = "dse"
  relation = ">"
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(spec, Options{Runs: root})
	if err != nil {
		t.Fatal(err)
	}
	abl := r.Claims[2]
	if got := abl.Models[0].Folder; got != filepath.Join(root, "toy", "eval", "dse") {
		t.Errorf("dse read from %s, want the toy claim's folder", got)
	}
	dse, variant := abl.Models[0].Cells[0], abl.Models[1].Cells[0]
	if dse.N != 2 || math.Abs(dse.Mean-0.42) > 1e-12 || variant.N != 2 || math.Abs(variant.Mean-0.52) > 1e-12 {
		t.Errorf("cells: dse %+v, variant %+v; want the toy claim's 0.42 and the variant's 0.52", dse, variant)
	}
	if abl.Verdict != Holds {
		t.Errorf("verdict %s, want holds", abl.Verdict)
	}
}

// A claim whose folders have a row nowhere, or whose result files are broken, says which.
func TestReportProblems(t *testing.T) {
	spec, err := ParseSpec("claims.toml", []byte(e2eSpec))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a row no file has", func(t *testing.T) {
		root := t.TempDir()
		writeToyRuns(t, root)
		os.Remove(filepath.Join(root, "toy", "eval", "base", "s1", "response-amazonqa.json"))
		os.Remove(filepath.Join(root, "toy", "eval", "base", "s0", "response-amazonqa.json"))
		r, err := Build(spec, Options{Runs: root})
		if err != nil {
			t.Fatal(err)
		}
		toy := r.Claims[0]
		want := `base: no row "response-selection amazonqa 100 candidates top1" in ` + filepath.Join(root, "toy", "eval", "base") + "/s*/*.json"
		if toy.Verdict != Incomplete || strings.Join(toy.Missing, "\n") != want {
			t.Fatalf("%s, missing %q; want incomplete, missing %q", toy.Verdict, toy.Missing, want)
		}
	})
	t.Run("a malformed result file", func(t *testing.T) {
		root := t.TempDir()
		writeToyRuns(t, root)
		bad := write(t, filepath.Join(root, "toy", "eval", "dse", "s1", "oos-clinc150.json"), `{"rows": [{"mean": "high"}]}`)
		_, err := Build(spec, Options{Runs: root})
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Fatalf("error %v, want one naming %s", err, bad)
		}
	})
	t.Run("a Markdown path ending in .json", func(t *testing.T) {
		r := &Report{}
		if _, err := r.Write(filepath.Join(t.TempDir(), "report.json")); err == nil {
			t.Fatal("wrote the Markdown where its JSON copy goes")
		}
	})
}

func TestCellAndEffectText(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{cellText(Cell{Summary: Summary{Mean: 0.1667, Std: 0.0097, N: 1, SplitSpread: true}}), "16.67 ± 0.97† (n=1)"},
		{cellText(Cell{Summary: Summary{Mean: 0.5, Std: 0.0123, N: 3}}), "50.00 ± 1.23 (n=3)"},
		{cellText(Cell{}), "–"},
		{effectText(math.Inf(1)), "∞"},
		{effectText(math.Inf(-1)), "−∞"},
		{effectText(-0.456), "-0.46"},
		{esc("a|b\nc"), `a\|b c`},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}
