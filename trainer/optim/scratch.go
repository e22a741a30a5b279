package optim

import (
	"fmt"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// makeScratch gives every parameter on the CPU a view, of its shape, into one buffer per dtype as large as
// the largest such parameter. Step's per-tensor kernels write its two temporaries (g², then the
// denominator) there with the out= forms of the ops instead of allocating them: a tensor above glibc's mmap
// threshold (32 MiB; BERT's word embeddings are 94 MB) comes back as fresh pages every step, and their faults
// cost about a seventh of a BERT-base step. Those updates run one parameter at a time, so sharing the buffer
// is safe. On a GPU Step runs foreach kernels over the whole group, whose temporaries come from libtorch's
// caching allocator, so parameters there get no scratch.
func (o *Optimizer) makeScratch() error {
	type key struct {
		dtype  gotch.DType
		device gotch.Device
	}
	return guarded("optim: scratch buffers", func() error {
		count := 0
		sizes := map[key]int64{}
		keys := map[*param]key{}
		for gi := range o.groups {
			for pi := range o.groups[gi].params {
				p := &o.groups[gi].params[pi]
				k := key{p.dtype, p.data.MustDevice()}
				count++
				if k.device.IsCuda() {
					continue
				}
				keys[p] = k
				sizes[k] = max(sizes[k], numel(p.shape))
			}
		}
		if count == 0 {
			return fmt.Errorf("no parameters")
		}
		flats := map[key]*ts.Tensor{}
		for k, n := range sizes {
			flats[k] = ts.MustEmpty([]int64{n}, k.dtype, k.device)
		}
		for p, k := range keys {
			p.scratch = flats[k].MustNarrow(0, 0, numel(p.shape), false).MustView(p.shape, true)
		}
		for _, f := range flats {
			f.MustDrop() // the views keep the storage
		}
		return nil
	})
}
