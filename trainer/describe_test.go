package trainer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convrep/models"
	"convrep/models/sbert"
	"convrep/trainer/trainertest"
)

// A finished run's model/ is a sentence-transformers model that embeds as its objective trains and
// evaluates (DSE: mean pooling, normalised; MLM: [CLS], as TOD-BERT uses it), with a model card; the run
// folder's README says what is where and how to go on.
func TestRunDescribesItself(t *testing.T) {
	for _, tc := range []struct {
		set       []string
		pooling   models.Pooling
		normalize bool
		objective string
	}{
		{nil, models.Mean, true, "dse"},
		{[]string{"objective.name=mlm"}, models.CLS, false, "mlm"},
	} {
		t.Run(tc.objective, func(t *testing.T) {
			dir := t.TempDir()
			exp := trainertest.Experiment(t, dir, "")
			if err := trainertest.Run(t, exp, append(tc.set, "train.max_steps=2"), false); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			l, err := sbert.Read(filepath.Join(out, "model"))
			want := sbert.Layout{Pooling: tc.pooling, Normalize: tc.normalize, MaxSeqLength: 16, Dim: 32}
			if err != nil || l != want {
				t.Errorf("model/ declares %+v (%v), want %+v", l, err, want)
			}
			card, err := os.ReadFile(filepath.Join(out, "model", "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"library_name: sentence-transformers", "- " + tc.objective, "| steps | 2 |", "```toml\nname = \"tiny\""} {
				if !strings.Contains(string(card), s) {
					t.Errorf("model card has no %q", s)
				}
			}
			guide, err := os.ReadFile(filepath.Join(out, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(guide), "convrep train --resume "+exp) || !strings.Contains(string(guide), "`model/`") {
				t.Errorf("run README:\n%s", guide)
			}
		})
	}
}
