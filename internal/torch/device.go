package torch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sugarme/gotch"
)

// ParseDevice reads cpu, cuda or cuda:N.
func ParseDevice(s string) (gotch.Device, error) {
	switch s = strings.ToLower(strings.TrimSpace(s)); {
	case s == "cpu":
		return gotch.CPU, nil
	case s == "cuda" || s == "gpu":
		if err := checkCuda(s); err != nil {
			return gotch.CPU, err
		}
		return gotch.CudaBuilder(0), nil
	case strings.HasPrefix(s, "cuda:"):
		n, err := strconv.Atoi(s[len("cuda:"):])
		if err != nil || n < 0 {
			return gotch.CPU, fmt.Errorf("device %q: the GPU index must be a number", s)
		}
		if err := checkCuda(s); err != nil {
			return gotch.CPU, err
		}
		if count := gotch.CUDA.DeviceCount(); int64(n) >= count {
			return gotch.CPU, fmt.Errorf("device %q: this machine has %d GPUs", s, count)
		}
		return gotch.CudaBuilder(uint(n)), nil
	}
	return gotch.CPU, fmt.Errorf("device %q is not cpu, cuda or cuda:N", s)
}

// MakeCurrent makes dev's GPU the current device of the calling OS thread, as torch.cuda.set_device does; on
// the CPU it does nothing. Call it right after runtime.LockOSThread on every thread that runs CUDA work:
// CUDA's current device is per thread, and work without a device guard goes to it (GPU 0 by default, where
// it would also open a context).
func MakeCurrent(dev gotch.Device) error {
	if !dev.IsCuda() {
		return nil
	}
	return SetCUDADevice(dev.Value)
}

func checkCuda(s string) error {
	if !gotch.CUDA.IsAvailable() {
		return fmt.Errorf("device %q: no CUDA device is available to this libtorch (is it a CPU build?)", s)
	}
	return nil
}
