package trainer_test

import (
	"testing"

	"convrep/internal/torch"
	"convrep/rundir"
	"convrep/trainer/trainertest"
)

// With train.deterministic every op of a training step has a deterministic kernel (libtorch would fail the
// step naming an op that has none), the run ends where the default one does (within sameLosses' and
// sameParams' 1e-5: on a GPU the default kernels' atomics may reorder sums), and the switch is put back for
// the runs after it: it is process-wide. The runs say train.deterministic=false themselves, because
// tinyExperiment turns it on for a GPU, where the other tests need it.
func TestDeterministicRunMatchesDefault(t *testing.T) {
	sets := []string{"train.max_steps=6", "train.checkpoint_every=6", "train.deterministic=false"}
	plain := trainertest.Experiment(t, t.TempDir(), "")
	if err := trainertest.Run(t, plain, sets, false); err != nil {
		t.Fatal(err)
	}
	if torch.Deterministic() {
		t.Fatal("a run with train.deterministic=false turned the switch on")
	}
	det := trainertest.Experiment(t, t.TempDir(), "")
	if err := trainertest.Run(t, det, append(sets[:2:2], "train.deterministic=true"), false); err != nil {
		t.Fatal(err)
	}
	sameLosses(t, outOf(plain), outOf(det), 6)
	sameParams(t, rundir.At(outOf(plain)).CheckpointPath(6), rundir.At(outOf(det)).CheckpointPath(6))
	if !torch.Deterministic() {
		t.Fatal("the deterministic run left the switch off")
	}
	again := trainertest.Experiment(t, t.TempDir(), "")
	if err := trainertest.Run(t, again, sets, false); err != nil {
		t.Fatal(err)
	}
	if torch.Deterministic() {
		t.Fatal("a run without train.deterministic kept the previous run's switch on")
	}
}
