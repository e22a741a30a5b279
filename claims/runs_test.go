package claims

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write writes a fixture file, making its folders.
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

// resultJSON is a hand-made cmd/evaluate result file with one row per {dataset, variant, metric, mean, std}.
func resultJSON(model, task string, rows ...[5]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"model": %q, "task": %q, "rows": [`, model, task)
	for i, r := range rows {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n  {\"model\": %q, \"dataset\": %q, \"task\": %q, \"variant\": %q, \"metric\": %q, "+
			"\"mean\": %v, \"std\": %v, \"seeds\": [0, 1, 2], \"values\": [0.1, 0.2, 0.3], \"settings\": {\"shots\": 1}}",
			model, r[0], task, r[1], r[2], r[3], r[4])
	}
	b.WriteString("\n], \"wall_seconds\": 12.5}\n")
	return b.String()
}

func TestReadModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "eval", "dse")
	write(t, filepath.Join(dir, "s10", "intent-clinc150.json"), resultJSON("dse", "intent", [5]any{"clinc150", "1-shot", "accuracy", 0.5, 0.01}))
	write(t, filepath.Join(dir, "s2", "intent-clinc150.json"), resultJSON("dse", "intent", [5]any{"clinc150", "1-shot", "accuracy", 0.4, 0.01}))
	write(t, filepath.Join(dir, "s2", "intent-clinc150.md"), "| a table |")
	write(t, filepath.Join(dir, "s2", "suite.json"), `{"suite": "another shape", "rows": 3}`)
	write(t, filepath.Join(dir, "s2", ".response.json.tmp-123"), "half a fi")
	write(t, filepath.Join(dir, "notes.txt"), "a file beside the seed folders")
	if err := os.MkdirAll(filepath.Join(dir, "s3"), 0o755); err != nil { // evaluation not started
		t.Fatal(err)
	}
	seeds, err := ReadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range seeds {
		got = append(got, fmt.Sprintf("%s:%d", s.Name, s.Files))
	}
	if strings.Join(got, " ") != "s2:1 s3:0 s10:1" {
		t.Fatalf("seeds %v, want s2:1 s3:0 s10:1", got)
	}
	key := Key{Task: "intent", Dataset: "clinc150", Variant: "1-shot", Metric: "accuracy"}
	row, ok, err := seeds[0].Lookup(key)
	if err != nil || !ok || row.Mean != 0.4 {
		t.Fatalf("s2's %s: %+v %v %v, want mean 0.4", key, row, ok, err)
	}
	if _, ok, err := seeds[1].Lookup(key); ok || err != nil {
		t.Fatalf("s3 has %s (%v)", key, err)
	}
	if seeds, err := ReadModel(filepath.Join(dir, "nope")); seeds != nil || err != nil {
		t.Fatalf("a model folder that does not exist: %v, %v; want nothing and no error", seeds, err)
	}
}

// Every bad result folder is an error that names the file or folder and the problem.
func TestReadModelErrors(t *testing.T) {
	good := resultJSON("dse", "intent", [5]any{"clinc150", "1-shot", "accuracy", 0.4, 0.01})
	for _, tc := range []struct {
		name  string
		files map[string]string // under the model's folder
		want  string            // the file or folder the error names, under the model's folder, and the problem
	}{
		{"malformed JSON", map[string]string{"s0/a.json": good, "s0/intent.json": `{"rows": [`}, "s0/intent.json: unexpected end of JSON input"},
		{"not a result", map[string]string{"s0/intent.json": `[1, 2]`}, "s0/intent.json: json: cannot unmarshal array"},
		{"no rows", map[string]string{"s0/intent.json": `{"model": "dse", "rows": []}`}, "s0/intent.json: no rows"},
		{"a folder that is no seed", map[string]string{"seed1/intent.json": good}, `folder "seed1" is not a seed folder`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				write(t, filepath.Join(dir, name), content)
			}
			_, err := ReadModel(dir)
			if err == nil {
				t.Fatal("no error")
			}
			want := strings.Replace(tc.want, "s0/", filepath.Join(dir, "s0")+"/", 1)
			if !strings.HasPrefix(tc.want, "s0/") {
				want = dir + `: ` + tc.want
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q, want one containing %q", err, want)
			}
		})
	}
}

func TestLookupAmbiguous(t *testing.T) {
	dir := t.TempDir()
	row := [5]any{"clinc150", "1-shot", "accuracy", 0.4, 0.01}
	write(t, filepath.Join(dir, "s0", "a.json"), resultJSON("dse", "intent", row))
	write(t, filepath.Join(dir, "s0", "b.json"), resultJSON("dse", "intent", row))
	seeds, err := ReadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = seeds[0].Lookup(Key{Task: "intent", Dataset: "clinc150", Variant: "1-shot", Metric: "accuracy"})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "s0", "a.json")) || !strings.Contains(err.Error(), filepath.Join(dir, "s0", "b.json")) {
		t.Fatalf("error %v, want one naming both files", err)
	}
}

func TestReadWallTime(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          string // WallTime.String(), or the error's text after the file's name
		stages        int
	}{
		{"two stages", "train\t3600\tdone\neval\t125.4\tdone\n", "1:02:05", 2},
		{"blank lines and CRLF", "\ntrain\t59.6\tdone\r\n\n", "0:01:00", 1},
		{"empty", "", "0:00:00", 0},
		{"two fields", "train\t3600\n", `:1: want stage<TAB>seconds<TAB>status, got 2 field(s) in "train\t3600"`, 0},
		{"not a number", "train\t3600\tdone\neval\tsoon\tdone\n", `:2: seconds "soon" is not a number ≥ 0`, 0},
		{"negative", "train\t-1\tdone\n", `:1: seconds "-1" is not a number ≥ 0`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, filepath.Join(t.TempDir(), "stages.tsv"), tc.content)
			w, err := ReadWallTime(path)
			if strings.HasPrefix(tc.want, ":") {
				if err == nil || err.Error() != path+tc.want {
					t.Fatalf("error %v, want %s%s", err, path, tc.want)
				}
				return
			}
			if err != nil || w.String() != tc.want || w.Stages != tc.stages {
				t.Fatalf("%s with %d stages (%v), want %s with %d", w, w.Stages, err, tc.want, tc.stages)
			}
		})
	}
	w, err := ReadWallTime(filepath.Join(t.TempDir(), "stages.tsv"))
	if err != nil || w.Known || w.String() != "unknown" {
		t.Fatalf("no stages.tsv: %+v %v, want an unknown wall time", w, err)
	}
}
