package trainer

import (
	"fmt"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/internal/jit"
	"convrep/internal/torch"
)

// useFusedKernels makes the encoder run on convrep's fused kernels (internal/jit) on a GPU, as
// train.fused_kernels says: unset, wherever they load, and the run logs why not where they do not; true,
// they must load (else the error); false, never. On a CPU the composites are the path and nothing is asked.
func useFusedKernels(setting *bool, dev gotch.Device, log *zap.Logger) error {
	on := setting == nil || *setting
	torch.UseKernels(on)
	if !on || !dev.IsCuda() {
		return nil
	}
	l, err := jit.Enable(dev)
	if err != nil {
		if setting != nil {
			return fmt.Errorf("train.fused_kernels: %w", err)
		}
		log.Info("fused kernels: not loaded, the encoder runs libtorch's composites", zap.String("why", err.Error()))
		return nil
	}
	log.Info("fused kernels: loaded", zap.Int("compute_capability", l.Arch), zap.String("nvrtc", l.NVRTC),
		zap.String("cache", l.CacheDir), zap.Duration("took", l.Took))
	return nil
}
