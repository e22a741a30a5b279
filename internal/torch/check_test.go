package torch_test

import (
	"slices"
	"strings"
	"testing"

	"convrep/internal/devtest"
	"convrep/internal/torch"

	"github.com/sugarme/gotch"
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

// An allocation libtorch cannot make reaches the caller as one line naming the size, without C++ frames (the
// CPU allocator's enforce failure carries them after "frame #").
func TestAllocationFailureIsOneLine(t *testing.T) {
	_, err := ts.Zeros([]int64{1 << 42}, gotch.Float, gotch.CPU) // 16 TiB
	if err == nil {
		t.Fatal("16 TiB allocated")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Contains(msg, "frame #") || !strings.Contains(msg, "17592186044416 bytes") {
		t.Errorf("error %q: want one line naming the 17592186044416 bytes", msg)
	}
}
