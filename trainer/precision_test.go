package trainer_test

import (
	"math"
	"strings"
	"testing"

	"convrep/checkpoint"
	"convrep/experiment"
	"convrep/rundir"
	"convrep/safetensors"
	"convrep/trainer"
	"convrep/trainer/trainertest"
)

// bf16 runs the forward pass under autocast and the loss in fp32: the loss differs from an fp32 run's
// (autocast acted) by no more than the encoder's bf16 rounding, the weights the optimiser keeps, and the
// checkpoint holds, stay fp32, the objective's metrics are logged, and the loss still falls.
func TestBF16KeepsFP32MasterWeights(t *testing.T) {
	var runs [2][]trainer.Metric
	for i, precision := range []string{"fp32", "bf16"} {
		path := trainertest.Experiment(t, t.TempDir(), "")
		if err := trainertest.Run(t, path, []string{"train.precision=" + precision, "train.max_steps=12", "train.checkpoint_every=100"}, false); err != nil {
			t.Fatal(err)
		}
		m, err := trainer.ReadMetrics(outOf(path) + "/metrics.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = m
		if precision == "fp32" {
			continue
		}
		f, err := safetensors.ReadFile(rundir.At(outOf(path)).CheckpointPath(12))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range f.Tensors {
			if strings.HasPrefix(x.Name, checkpoint.ParamPrefix) && x.DType != safetensors.F32 {
				t.Errorf("%s is stored as %s, want F32 master weights", x.Name, x.DType)
			}
		}
	}
	m := runs[1]
	first, last := m[0].Loss, m[len(m)-1].Loss
	if math.IsNaN(last) || !(last < first) {
		t.Errorf("bf16 loss went from %v to %v", first, last)
	}
	ref := runs[0][0].Loss
	t.Logf("first loss: fp32 %.6f, bf16 %.6f; bf16 metrics %v", ref, first, m[0].Objective)
	if first == ref || math.Abs(first-ref) > 0.02*ref {
		t.Errorf("first loss %v under bf16, %v in fp32: want a difference, within 2%%", first, ref)
	}
	if c, ok := m[0].Objective["pos_cos"]; !ok || math.IsNaN(c) || c < -1 || c > 1 {
		t.Errorf("bf16 run's objective metrics %v: want DSE's pos_cos in [-1, 1]", m[0].Objective)
	}
}

func TestPrecisionIsChecked(t *testing.T) {
	path := trainertest.Experiment(t, t.TempDir(), "")
	if _, err := experiment.Load(path, []string{"train.precision=fp16"}); err == nil || !strings.Contains(err.Error(), "train.precision") ||
		!strings.Contains(err.Error(), "gradient scaler") {
		t.Fatalf("fp16 on the trainer: %v", err)
	}
}
