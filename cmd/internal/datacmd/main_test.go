package datacmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/internal/shared"
)

func runData(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut, zap.NewNop())
	return code, out.String(), errOut.String()
}

func TestConvertWritesDialogues(t *testing.T) {
	data := shared.MustPath(t, "data", "pretrain")
	out := filepath.Join(t.TempDir(), "sub", "dialogues.jsonl")
	code, _, stderr := runData("convert", "--data", data, "--corpora", "woz2, camrest676", "--out", out, "--merge-speakers")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ds, err := datasets.ReadJSONL(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1200+676 || ds[0].Corpus != "woz2" || ds[len(ds)-1].Corpus != "camrest676" {
		t.Errorf("%d dialogues, %s first, %s last; want 1876, woz2 then camrest676", len(ds), ds[0].Corpus, ds[len(ds)-1].Corpus)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*tmp*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestStatsTable(t *testing.T) {
	data := shared.MustPath(t, "data", "pretrain")
	code, stdout, stderr := runData("stats", "--data", data, "--corpora", "camrest676,woz2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	want := [][]string{
		{"corpus", "dialogues", "turns", "words", "turns/dialogue"},
		{"camrest676", "676", "5488"},
		{"woz2", "1200", "8824"},
		{"total", "1876", "14312"},
	}
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s", stdout)
	}
	for i, w := range want {
		f := strings.Fields(lines[i])
		for j := range w {
			if j >= len(f) || f[j] != w[j] {
				t.Errorf("row %d = %q, want it to start with %q", i, lines[i], w)
				break
			}
		}
	}
}

func TestCommandErrors(t *testing.T) {
	data := shared.MustPath(t, "data", "pretrain")
	broken := t.TempDir()
	if err := os.MkdirAll(filepath.Join(broken, "woz2", "data", "woz"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "woz2", "data", "woz", "woz_test_en.json"), []byte(`[{"dialogue": []}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "o.jsonl")
	for _, c := range []struct {
		args []string
		code int
		want string // in stderr; errors go to the log, checked by the code alone
	}{
		{[]string{}, 2, "usage: data <command>"},
		{[]string{"--help"}, 0, "commands:"},
		{[]string{"convert", "--help"}, 0, "--merge-speakers"},
		{[]string{"stats", "-h"}, 0, "turns/dialogue"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"convert", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"stats", "extra"}, 2, "unexpected arguments"},
		{[]string{"prepare"}, 2, "want 1"},
		{[]string{"prepare", "a.toml", "b.toml"}, 2, "want 1"},
		{[]string{"prepare", "--help"}, 0, "PeakRSSMiB"},
		{[]string{"prepare", "--set", "seed=1"}, 2, "want 1"},
		{[]string{"prepare", filepath.Join(t.TempDir(), "absent.toml")}, 1, ""},
		{[]string{"convert", "--data", data}, 1, ""},
		{[]string{"stats", "--data", data, "--corpora", "nope"}, 1, ""},
		{[]string{"stats", "--data", data, "--corpora", "woz2,woz2"}, 1, ""},
		{[]string{"stats", "--data", filepath.Join(data, "absent")}, 1, ""},
		{[]string{"convert", "--data", broken, "--corpora", "woz2", "--out", out}, 1, ""},
		{[]string{"convert", "--data", broken, "--corpora", "woz2", "--out", out, "--skip-bad"}, 0, ""},
	} {
		code, _, stderr := runData(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("data %v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

// stats says how many MultiWOZ dialogues of MetaLWOZ it dropped (all 2,924 by default), and the metalwoz
// row counts what is left; --metalwoz-multiwoz keeps them.
func TestStatsMetaLWOZMultiWOZ(t *testing.T) {
	data := shared.MustPath(t, "data", "pretrain")
	for _, c := range []struct {
		args      []string
		dialogues string
		note      string
	}{
		{nil, "2319", "metalwoz: 2924 MultiWOZ 2.0 dialogues dropped"},
		{[]string{"--metalwoz-multiwoz"}, "5243", ""},
	} {
		code, stdout, stderr := runData(append([]string{"stats", "--data", data, "--corpora", "metalwoz"}, c.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) < 2 || !strings.HasPrefix(strings.TrimSpace(lines[1]), "metalwoz") || strings.Fields(lines[1])[1] != c.dialogues {
			t.Errorf("%v: table\n%s\nwant metalwoz with %s dialogues", c.args, stdout, c.dialogues)
		}
		if got := strings.Contains(stdout, "MultiWOZ 2.0 dialogues dropped"); got != (c.note != "") || !strings.Contains(stdout, c.note) {
			t.Errorf("%v: output\n%s\nwant the note %q", c.args, stdout, c.note)
		}
	}
}
