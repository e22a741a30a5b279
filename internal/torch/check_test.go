package torch_test

import (
	"slices"
	"testing"

	"convrep/internal/devtest"
	"convrep/internal/torch"

	"github.com/sugarme/gotch/ts"
)

// The set-up's device check passes on the test device (the CPU here; a GPU with CONVREP_TEST_DEVICE=cuda,
// where it also captures and replays a CUDA graph), leaving no tensor handle behind.
func TestCheckDevice(t *testing.T) {
	dev := devtest.Device(t)
	before := ts.LiveTensors()
	checked, err := torch.CheckDevice(dev)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"matmul"}
	if dev.IsCuda() {
		want = append(want, "graph capture and replay")
	}
	if !slices.Equal(checked, want) {
		t.Errorf("checked %q, want %q", checked, want)
	}
	if after := ts.LiveTensors(); after != before {
		t.Errorf("%d tensor handles live after the check, %d before", after, before)
	}
}
