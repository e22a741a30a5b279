package traincmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"convrep/experiment"
	"convrep/internal/shared"
	"convrep/trainer"
)

// A shipped experiment copied into a user's folder, with its data beside it, dry-runs there from another
// working directory: every path is read from the file's folder, ../shared through CONVREP_SHARED, and the dry
// run prints each resolved path.
func TestShippedExperimentDryRunsFromAnotherFolder(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(repo, "experiments", "dse_own_data_mini_cpu.toml"))
	if err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(filepath.Join(repo, "examples", "own-dialogues", "support.csv"))
	if err != nil {
		t.Fatal(err)
	}
	user := filepath.Join(t.TempDir(), "support-team")
	if err := os.MkdirAll(filepath.Join(user, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	const shippedFiles = `files = ["../examples/own-dialogues/support.csv"]`
	if !bytes.Contains(src, []byte(shippedFiles)) {
		t.Fatalf("the shipped experiment no longer says %s", shippedFiles)
	}
	src = bytes.Replace(src, []byte(shippedFiles), []byte(`files = ["data/support.csv"]`), 1)
	exp := filepath.Join(user, "dse_support.toml")
	for path, b := range map[string][]byte{exp: src, filepath.Join(user, "data", "support.csv"): csv} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("CONVREP_SHARED", shared.MustPath(t))
	t.Chdir(t.TempDir()) // somewhere else altogether

	e, err := experiment.Load(exp, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := trainer.DryRun(context.Background(), e, &out, zap.NewNop()); err != nil {
		t.Fatalf("dry run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		filepath.Join(shared.MustPath(t, "models", "mini-bert-dialogue-mlm")),
		filepath.Join(filepath.Dir(user), "runs", "dse_own_data_mini_cpu"),
		filepath.Join(user, "data", "support.csv"),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the dry run does not print the resolved path %s:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(user), "runs")); err == nil {
		t.Error("the dry run wrote the output folder")
	}
}
