package trainer_test

import (
	"strings"
	"testing"

	"convrep/trainer/trainertest"
)

// Each group the objective declares trains at the [train] rate it names: DSE's contrastive head at
// train.head_lr, the encoder at train.lr (optimGroups), and every trainable tensor is in exactly one group.
func TestGroupsTrainAtTheirRates(t *testing.T) {
	dir := t.TempDir()
	tr, err := trainertest.New(t, trainertest.Experiment(t, dir, ""), []string{"train.lr=1e-3", "train.head_lr=0.25"}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseCluster()
	seen := map[string]int{}
	head, enc := 0, 0
	for _, g := range tr.Groups() {
		for _, name := range g.ParamNames {
			seen[name]++
			want := 1e-3
			if strings.HasPrefix(name, "contrast_head.") {
				want = 0.25
				head++
			} else {
				enc++
			}
			if g.LR != want {
				t.Errorf("%s trains at %v, want %v", name, g.LR, want)
			}
		}
	}
	if head == 0 || enc == 0 {
		t.Fatalf("%d head and %d encoder tensors in the groups: want both", head, enc)
	}
	for name := range tr.Params() {
		if seen[name] != 1 {
			t.Errorf("%s is in %d groups, want 1", name, seen[name])
		}
	}
}
