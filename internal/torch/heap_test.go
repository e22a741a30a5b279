package torch

import (
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// TestFreedTensorsStayInTheHeap allocates libtorch tensors of 1, 8 and 24 MiB (the sizes of a step's
// activations and gradients) and wants none of them mapped on its own. With glibc's defaults the 8 and 24 MiB
// ones are (its threshold starts at 128 KiB and rises only to the largest mapped block freed so far).
func TestFreedTensorsStayInTheHeap(t *testing.T) {
	if !heapKept {
		t.Fatal("keepHeap did not take (GLIBC_TUNABLES sets a malloc tunable, or mallopt refused)")
	}
	before := mappedBlocks()
	for _, mib := range []int64{1, 8, 24} {
		x := ts.MustZeros([]int64{mib << 18}, gotch.Float, gotch.CPU) // 4-byte floats: mib MiB
		if n := mappedBlocks(); n != before {
			t.Errorf("a %d MiB tensor: %d blocks mapped on their own, want %d", mib, n, before)
		}
		x.MustDrop()
	}
}
