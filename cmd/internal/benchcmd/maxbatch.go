package benchcmd

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/sugarme/gotch"
)

// findMaxBatch doubles the batch from start while try succeeds, up to limit, and returns the largest batch
// that fitted. A batch that runs out of memory ends the search; any other error is returned, and so is an
// out-of-memory error at the first batch, which leaves nothing to report.
func findMaxBatch(start, limit int64, try func(batch int64) error) (int64, error) {
	if start > limit {
		return 0, fmt.Errorf("find max batch: --batch = %d exceeds --max-batch = %d", start, limit)
	}
	best := int64(0)
	for b := start; b <= limit; b *= 2 {
		err := try(b)
		if err == nil {
			best = b
			continue
		}
		if !isOutOfMemory(err) {
			return 0, fmt.Errorf("find max batch: batch %d: %w", b, err)
		}
		if best == 0 {
			return 0, fmt.Errorf("find max batch: even the first batch %d does not fit: %w", b, err)
		}
		break
	}
	return best, nil
}

// isOutOfMemory recognises libtorch's allocation failures: the CUDA caching allocator's "CUDA out of memory"
// and the CPU allocator's "can't allocate memory".
func isOutOfMemory(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "out of memory") || strings.Contains(msg, "can't allocate memory")
}

// tryBatch builds a fresh model, DSE head and optimiser for batch pairs and runs two steps: the first
// creates Adam's state, the second is a steady step at the peak memory of the timed ones. Everything is
// released before it returns, so the next, larger batch starts from the same free memory.
func tryBatch(o options, dev gotch.Device, batch int64) error {
	o.Batch = batch
	s, err := newSetup(o, dev)
	if err != nil {
		return err
	}
	defer func() {
		s.release()
		// Tensors an interrupted step left behind are freed by their finalizers; two collections queue them.
		runtime.GC()
		runtime.GC()
	}()
	for i := 0; i < 2; i++ {
		if err := s.step(); err != nil {
			return err
		}
		if _, err := s.stepper.ReadLoss(); err != nil {
			return err
		}
	}
	return s.sync()
}
