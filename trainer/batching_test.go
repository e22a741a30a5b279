package trainer_test

import (
	"convrep/trainer/trainertest"
	"path/filepath"
	"testing"
)

// A DSE run keeps each epoch's last partial batch, its default (the authors' DataLoader, drop_last=False): 40
// pairs at 16 a step are 3 steps, the last of 8; train.drop_last = true gives the 2 full ones.
func TestDSEKeepsTheLastPartialBatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   []string
		steps int
	}{
		{"dse's default", nil, 3},
		{"drop_last", []string{"train.drop_last=true"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			set := append([]string{"data.max_examples=40", "train.batch_size=16", "train.max_steps=0", "train.epochs=1",
				"train.log_every=1"}, tc.set...)
			if err := trainertest.Run(t, trainertest.Experiment(t, dir, ""), set, false); err != nil {
				t.Fatal(err)
			}
			if ms := readMetricLines(t, filepath.Join(dir, "out")); len(ms) != tc.steps {
				t.Errorf("%d steps, want %d", len(ms), tc.steps)
			}
		})
	}
}
