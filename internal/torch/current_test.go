package torch

import (
	"strings"
	"testing"

	"github.com/sugarme/gotch"
)

// MakeCurrent does nothing for the CPU and sets the thread's GPU otherwise: in a CPU build, an error naming
// the GPU; with CUDA, the device libtorch then reports as current.
func TestMakeCurrent(t *testing.T) {
	cuda := gotch.CUDA.IsAvailable()
	for _, c := range []struct {
		dev     gotch.Device
		wantErr bool
	}{
		{gotch.CPU, false},
		{gotch.CudaBuilder(0), !cuda},
	} {
		err := MakeCurrent(c.dev)
		if (err != nil) != c.wantErr {
			t.Errorf("MakeCurrent(%s) = %v, want an error: %v", DeviceName(c.dev), err, c.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), DeviceName(c.dev)) {
			t.Errorf("MakeCurrent(%s) = %v, which does not name the device", DeviceName(c.dev), err)
		}
	}
}
