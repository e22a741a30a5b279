package models

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// ToDevice moves x, a batch tensor just built on the CPU, to dev and drops x; on the CPU it returns x. For a
// GPU the values go through page-locked memory with a non-blocking copy (torch's DataLoader pin_memory=True
// with .to(device, non_blocking=True)): the copy is queued on the device's stream behind the kernels already
// there, and the host goes on at once. A blocking copy from pageable memory would instead wait for the
// stream to drain (copy_ synchronises it, aten/src/ATen/native/cuda/Copy.cu), which would stall the trainer
// once per tensor of every batch. Dropping the pinned tensor right away is safe: for a non-blocking copy out
// of pinned memory, libtorch records an event on the stream and reuses the block only after it
// (CachingHostAllocator_recordEvent). It panics on a libtorch error, as gotch's Must* calls do.
func ToDevice(x *ts.Tensor, dev gotch.Device) *ts.Tensor {
	if !dev.IsCuda() {
		return x
	}
	// pin_memory() with no device pins for the default accelerator, the GPU the copy goes to (torch.PinMemory).
	pinned, err := torch.PinMemory(x)
	if err != nil {
		panic(err)
	}
	x.MustDrop()
	return pinned.MustToDevice(dev, pinned.DType(), true, false, true)
}
