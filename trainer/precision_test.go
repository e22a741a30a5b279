package trainer

import (
	"math"
	"strings"
	"testing"

	"convrep/checkpoint"
	"convrep/experiment"
	"convrep/safetensors"
)

// bf16 runs the forward pass under autocast: the loss is computed in bfloat16 yet the weights the optimiser
// keeps, and the checkpoint holds, stay fp32, and the loss still falls.
func TestBF16KeepsFP32MasterWeights(t *testing.T) {
	path := tinyExperiment(t, t.TempDir(), "")
	if err := train(t, path, []string{"train.precision=bf16", "train.max_steps=12", "train.checkpoint_every=100"}, false); err != nil {
		t.Fatal(err)
	}
	m, err := readMetrics(outOf(path) + "/metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	first, last := m[0].Loss, m[len(m)-1].Loss
	if math.IsNaN(last) || !(last < first) {
		t.Errorf("bf16 loss went from %v to %v", first, last)
	}
	// bfloat16 keeps 8 significant bits: a loss between 2 and 8 (chance here is log 31) is a multiple of 2^-6.
	if v := first * 64; v != math.Trunc(v) {
		t.Errorf("first loss %v is not a bfloat16 value: autocast was not on", first)
	}
	f, err := safetensors.ReadFile(checkpoint.PathAt(outOf(path), 12))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range f.Tensors {
		if strings.HasPrefix(x.Name, checkpoint.ParamPrefix) && x.DType != safetensors.F32 {
			t.Errorf("%s is stored as %s, want F32 master weights", x.Name, x.DType)
		}
	}
}

func TestPrecisionIsChecked(t *testing.T) {
	path := tinyExperiment(t, t.TempDir(), "")
	if _, err := experiment.Load(path, []string{"train.precision=fp16"}); err == nil || !strings.Contains(err.Error(), "train.precision") {
		t.Fatalf("fp16 on the trainer: %v", err)
	}
}
