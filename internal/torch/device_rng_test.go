package torch_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/devtest"
	"convrep/internal/torch"
)

// The generator of the device the tests run on (the CPU's, or under scripts/gpu_check.sh the GPU's Philox
// generator, whose state is its seed and offset) gives its state and takes it back: draws after a restore
// repeat the draws after the save, as dropout does after a resume; another seed draws otherwise.
func TestGeneratorStateOnDevice(t *testing.T) {
	dev := devtest.Device(t)
	draw := func() string {
		x := ts.MustRand([]int64{64}, gotch.Float, dev)
		defer x.MustDrop()
		vals, err := torch.Read(x)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(vals)
	}
	if err := torch.SeedRNG(dev, 11); err != nil {
		t.Fatal(err)
	}
	draw() // move the generator on from its seed, as a run does
	saved, err := torch.RNGState(dev)
	if err != nil {
		t.Fatal(err)
	}
	want := draw()
	if draw() == want {
		t.Fatal("two draws in a row were equal: the generator did not move")
	}
	if err := torch.SetRNGState(dev, saved); err != nil {
		t.Fatal(err)
	}
	if got := draw(); got != want {
		t.Fatalf("after restoring the state on %v the draws differ", dev)
	}
	again, err := torch.RNGState(dev)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(again, saved) {
		t.Fatal("the state read after a draw equals the one before it")
	}
	if err := torch.SeedRNG(dev, 12); err != nil {
		t.Fatal(err)
	}
	if draw() == want {
		t.Fatal("seeds 11 and 12 drew the same numbers")
	}
}
