package trainer

import (
	"errors"
	"runtime"

	"convrep/internal/torch"
	"convrep/objectives"
)

// prefetcher builds an epoch's batches one step ahead: while step n runs, a goroutine tokenises, pads and
// copies step n+1's micro-batches (on a GPU through pinned memory with non-blocking copies, models.ToDevice),
// so a step does not wait for Go to lay out its batch after the previous one.
//
// The goroutine only builds tensors from Go slices: no autograd op, nothing that reads libtorch's
// thread-local grad mode or autocast state (those stay on the run's own locked thread), and no draw from
// libtorch's generator (the datasets draw their masks and splits from Go generators keyed by seed, epoch and
// example), so a batch built but never taken changes no random stream and a resumed run is the same.
// It alone calls the dataset's SetEpoch and Batch while it runs, so they need no lock.
type prefetcher struct {
	out  chan prefetched
	stop chan struct{}
	done chan struct{}
}

// prefetched is one step's micro-batches and this rank's examples in each, or the error that ended the
// building.
type prefetched struct {
	batches []objectives.Batch
	rows    []int
	err     error
}

// prefetch starts building the steps [from, to) of epoch's batch order; close stops it. A last step past the
// full ones (a kept partial batch, epochSteps) takes the rest of the order (microBatches).
func (t *Trainer) prefetch(order []int, epoch, from, to int) *prefetcher {
	p := &prefetcher{out: make(chan prefetched), stop: make(chan struct{}), done: make(chan struct{})}
	micro := t.exp.Train.BatchSize
	perStep := micro * t.exp.Train.GradAccumulation
	go func() {
		defer close(p.done)
		// gotch reads libtorch's error from the calling thread after each call: stay on one. CUDA's current
		// device is per thread too: the pinned buffers and the copies' stream are the model's GPU's, not GPU 0's.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := torch.MakeCurrent(t.dev); err != nil {
			select {
			case p.out <- prefetched{err: err}:
			case <-p.stop:
			}
			return
		}
		t.enterEpoch(epoch)
		for b := from; b < to; b++ {
			idx := order[b*perStep : min((b+1)*perStep, len(order))]
			var next prefetched
			for _, part := range microBatches(idx, micro, perStep, t.cl.world()) {
				var mb objectives.Batch
				rows := t.cl.shard(part)
				err := torch.Catch("build a batch", func() (err error) {
					mb, err = t.data.Batch(rows, t.dev)
					return err
				})
				if err != nil {
					dropBatches(next.batches)
					next = prefetched{err: err}
					break
				}
				next.batches, next.rows = append(next.batches, mb), append(next.rows, len(rows))
			}
			select {
			case p.out <- next:
			case <-p.stop:
				dropBatches(next.batches)
				return
			}
			if next.err != nil {
				return
			}
		}
	}()
	return p
}

// next is the next step's micro-batches, which the caller then owns, and this rank's examples in each.
func (p *prefetcher) next() ([]objectives.Batch, []int, error) {
	select {
	case n := <-p.out:
		return n.batches, n.rows, n.err
	case <-p.done:
		// Never reached by a caller that asks for no more steps than it started; say so rather than hang.
		return nil, nil, errPrefetchEnded
	}
}

// close stops the goroutine, drops what it built for a step never taken, and waits for it to end.
func (p *prefetcher) close() {
	close(p.stop)
	<-p.done
}

var errPrefetchEnded = errors.New("the batch builder ended before the step asked for its batch")

// dropBatches frees the tensors of the batches not yet dropped.
func dropBatches(bs []objectives.Batch) {
	for i := range bs {
		if bs[i].Drop != nil {
			bs[i].Drop()
			bs[i].Drop = nil
		}
	}
}
