package trainer

import (
	"fmt"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/internal/gpu/jit"
	"convrep/internal/torch"
)

// useFusedKernels makes the encoder run on convrep's fused kernels (internal/gpu/jit) on a GPU when
// train.fused_kernels is true: they must load, else the error. Unset or false, libtorch's composites run: on
// an H200 (2026-11-27) the kernels as they are made the BERT-base step slower (docs/gpu.md). On a CPU the
// composites are the path and nothing is asked.
func useFusedKernels(setting *bool, dev gotch.Device, log *zap.Logger) error {
	on := setting != nil && *setting
	torch.UseKernels(on)
	if !on || !dev.IsCuda() {
		return nil
	}
	l, err := jit.Enable(dev)
	if err != nil {
		return fmt.Errorf("train.fused_kernels: %w", err)
	}
	log.Info("fused kernels: loaded", zap.Int("compute_capability", l.Arch), zap.String("nvrtc", l.NVRTC),
		zap.String("cache", l.CacheDir), zap.Duration("took", l.Took))
	return nil
}
