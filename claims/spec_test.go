package claims

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validSpec is a spec with every key: the base the error cases below break one thing of.
const validSpec = `# scripts/claims.toml
[[claim]]
id = "dse"
title = "DSE Tables 2 and 4"
statement = "DSE > SimCSE-dropout > backbone on 1-shot intent classification"
notes = "scaled down"
models = ["backbone", "simcse", "dse"]
labels = { backbone = "mini BERT (start)", simcse = "SimCSE-dropout", dse = "DSE" }

  [[claim.row]]
  task = "intent"
  dataset = "clinc150"
  variant = "1-shot"
  metric = "accuracy"
  label = "CLINC150 1-shot"

  [[claim.row]]
  task = "response-selection"
  dataset = "amazonqa"
  variant = "100 candidates"
  metric = "top1"

  [[claim.compare]]
  better = "dse"
  worse = "simcse"
  relation = ">"
  rows = ["CLINC150 1-shot"]

  [[claim.compare]]
  better = "simcse"
  worse = "backbone"
  relation = ">="
`

func writeSpec(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "claims.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadSpec(t *testing.T) {
	s, err := ReadSpec(writeSpec(t, validSpec))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Claims) != 1 {
		t.Fatalf("%d claims, want 1", len(s.Claims))
	}
	c := &s.Claims[0]
	for _, tc := range []struct{ name, got, want string }{
		{"id", c.ID, "dse"},
		{"model label", c.ModelLabel("backbone"), "mini BERT (start)"},
		{"row label", c.Rows[0].Name(), "CLINC150 1-shot"},
		{"row without label", c.Rows[1].Name(), "response-selection amazonqa 100 candidates top1"},
		{"first compare's rows", strings.Join(rowNamesOf(c.CompareRows(c.Compares[0])), ","), "CLINC150 1-shot"},
		{"second compare's rows", strings.Join(rowNamesOf(c.CompareRows(c.Compares[1])), ","), "CLINC150 1-shot,response-selection amazonqa 100 candidates top1"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func rowNamesOf(rows []Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Name()
	}
	return out
}

// Every error names the file, and the line or the claim and entry, and the problem.
func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string // validSpec with old replaced by new
		want     []string
	}{
		{"unknown key in a claim", `notes = "scaled down"`, `nots = "scaled down"`, []string{":6: unknown key \"claim.nots\""}},
		{"unknown key in a row", `  label = "CLINC150 1-shot"`, `  lable = "CLINC150 1-shot"`, []string{":15: unknown key \"claim.row.lable\""}},
		{"unknown table", "  [[claim.compare]]\n  better = \"simcse\"", "  [[claim.comapre]]\n  better = \"simcse\"", []string{"unknown key \"claim.comapre\""}},
		{"compare naming an unknown model", `worse = "backbone"`, `worse = "bakbone"`, []string{`claim "dse": compare 2: worse "bakbone" is not one of models (backbone, simcse, dse)`}},
		{"compare with an unknown row", `rows = ["CLINC150 1-shot"]`, `rows = ["CLINC150 5-shot"]`, []string{`claim "dse": compare 1: rows names "CLINC150 5-shot", which is no row's label`}},
		{"bad relation", `relation = ">="`, `relation = "=>"`, []string{`claim "dse": compare 2: relation "=>" is not one of ">", ">="`}},
		{"missing relation", `relation = ">="`, ``, []string{`compare 2: relation "" is not one of`}},
		{"better is worse", `better = "simcse"`, `better = "backbone"`, []string{`compare 2: better and worse are both "backbone"`}},
		{"duplicate id", "", "\n[[claim]]\nid = \"dse\"\n", []string{`claim "dse": id "dse" is used by claim 1 too`}},
		{"unsafe id", `id = "dse"`, `id = "../dse"`, []string{`id "../dse" is not a safe folder name`}},
		{"unsafe model", `models = ["backbone", "simcse", "dse"]`, `models = ["backbone", "simcse", "dse", "a/b"]`, []string{`model "a/b" is not a safe folder name`}},
		{"label of an unknown model", `dse = "DSE" }`, `dse = "DSE", tod = "TOD" }`, []string{`labels names "tod", which is not one of models`}},
		{"duplicate row label", `metric = "top1"`, "metric = \"top1\"\nlabel = \"CLINC150 1-shot\"", []string{`row 2: label "CLINC150 1-shot" is row 1's too`}},
		{"row without a metric", `metric = "top1"`, ``, []string{`claim "dse": row 2: metric is missing`}},
		{"no statement", `statement = "DSE > SimCSE-dropout > backbone on 1-shot intent classification"`, ``, []string{`claim "dse": statement is missing`}},
		{"wrong type", `models = ["backbone", "simcse", "dse"]`, `models = "dse"`, []string{":7: "}},
		{"not TOML", `id = "dse"`, `id = `, []string{":3: "}},
		{"results of an unknown model", `dse = "DSE" }`, "dse = \"DSE\" }\nresults = { tod = \"other\" }", []string{`claim "dse": results names "tod", which is not one of models`}},
		{"results under an unknown claim", `dse = "DSE" }`, "dse = \"DSE\" }\nresults = { dse = \"other\" }", []string{`claim "dse": results: model "dse" is evaluated under claim "other", which is not another claim of the spec`}},
		{"results under the claim itself", `dse = "DSE" }`, "dse = \"DSE\" }\nresults = { dse = \"dse\" }", []string{`model "dse" is evaluated under claim "dse", which is not another claim`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := validSpec + tc.new
			if tc.old != "" {
				if !strings.Contains(validSpec, tc.old) {
					t.Fatalf("the spec has no %q", tc.old)
				}
				src = strings.Replace(validSpec, tc.old, tc.new, 1)
			}
			path := writeSpec(t, src)
			_, err := ReadSpec(path)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range append([]string{path}, tc.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestSpecWithoutClaims(t *testing.T) {
	path := writeSpec(t, "# nothing yet\n")
	_, err := ReadSpec(path)
	if err == nil || !strings.Contains(err.Error(), path+": no [[claim]] entries") {
		t.Fatalf("error %v, want one naming %s and the missing claims", err, path)
	}
}
