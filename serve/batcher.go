package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"convrep/internal/torch"
	"convrep/models"
)

// windowBatches is how many batches' worth of the oldest queued inputs a batch is chosen from (nextBatch):
// enough that its rows are close in length (drained from a queue of 2,048 inputs of 3-32 tokens, batches of 64
// pad 14 % over the real tokens from a window of 4 batches, 7 % from 8, 2.5 % from 32), few enough that
// choosing is cheap (a sort of up to 2,048 lengths, against a forward pass of milliseconds).
const windowBatches = 32

// embedFunc runs one forward pass over rows and returns one vector per row, in order (Embedder.EmbedEncoded).
// The batcher calls it on its inference goroutine only.
type embedFunc func(rows []models.Encoded) ([][]float32, error)

// onThread makes embed run on th (Config.Thread), a panic there becoming its error; nil th leaves it as it
// is, to run on the inference goroutine's thread.
func onThread(th *torch.Thread, embed embedFunc) embedFunc {
	if th == nil {
		return embed
	}
	return func(rows []models.Encoded) (vecs [][]float32, err error) {
		th.Do(func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("forward pass panicked: %v", r)
				}
			}()
			vecs, err = embed(rows)
		})
		return vecs, err
	}
}

// errGone is a job whose client went away before its answer.
var errGone = errors.New("the client went away")

// errStopped is a job submitted after the batcher stopped.
var errStopped = errors.New("the server is stopping")

// job is one request's inputs. Its results are written by the inference goroutine and read once done is
// closed.
type job struct {
	ctx       context.Context
	vecs      [][]float32
	err       error
	left      int
	done      chan struct{}
	queue     time.Duration // the longest wait of its inputs, from submit to their forward pass
	inference time.Duration // the forward passes that held its inputs, summed
	lastBatch uint64
}

// item is one input of a job in the queue.
type item struct {
	job    *job
	index  int
	row    models.Encoded
	queued time.Time
}

// batcher holds the queue of inputs from every request and runs them in batches on one goroutine locked to
// its OS thread.
type batcher struct {
	embed     embedFunc
	maxTokens int // rows × longest row per forward pass
	maxRows   int
	limit     int // inputs admitted and not yet answered
	m         *metrics

	inFlight atomic.Int64
	mu       sync.Mutex
	queue    []*item
	closed   bool
	wake     chan struct{} // a signal that the queue grew or closed
	batches  chan []*item  // the next batch, chosen while one runs
	done     chan struct{} // closed when the inference goroutine has ended
}

func newBatcher(embed embedFunc, maxTokens, maxRows, limit int, m *metrics) *batcher {
	return &batcher{embed: embed, maxTokens: maxTokens, maxRows: maxRows, limit: limit, m: m,
		wake: make(chan struct{}, 1), batches: make(chan []*item), done: make(chan struct{})}
}

// start runs the batch cutter and the inference goroutine until close.
func (b *batcher) start() {
	go b.cut()
	go b.infer()
}

// close stops taking inputs, runs those queued, and returns once the inference goroutine has ended.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.signal()
	<-b.done
}

func (b *batcher) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// admit reserves room for n inputs, or says there is none (the request is answered 429). Each admitted
// input is released when its job ends, or by release when it is never submitted.
func (b *batcher) admit(n int) bool {
	for {
		cur := b.inFlight.Load()
		if cur+int64(n) > int64(b.limit) {
			return false
		}
		if b.inFlight.CompareAndSwap(cur, cur+int64(n)) {
			b.m.inFlight.Add(float64(n))
			return true
		}
	}
}

func (b *batcher) release(n int) {
	b.inFlight.Add(-int64(n))
	b.m.inFlight.Sub(float64(n))
}

// submit queues rows, admitted before, as one job; ctx is the request's, whose end drops the rows not yet run.
func (b *batcher) submit(ctx context.Context, rows []models.Encoded) *job {
	j := &job{ctx: ctx, vecs: make([][]float32, len(rows)), left: len(rows), done: make(chan struct{})}
	now := time.Now()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		j.err = errStopped
		b.release(len(rows))
		close(j.done)
		return j
	}
	for i, r := range rows {
		b.queue = append(b.queue, &item{job: j, index: i, row: r, queued: now})
	}
	b.mu.Unlock()
	b.m.queued.Add(float64(len(rows)))
	b.signal()
	return j
}

// wait returns the job's vectors once its inputs have run, or errGone as soon as its client has gone.
func (j *job) wait() ([][]float32, error) {
	select {
	case <-j.done:
		return j.vecs, j.err
	case <-j.ctx.Done():
		return nil, errGone
	}
}

// cut chooses batches from the queue and hands them to the inference goroutine: the next one is chosen when
// the previous one starts, from what has been queued by then.
func (b *batcher) cut() {
	defer close(b.batches)
	for {
		batch := b.take()
		if batch == nil {
			return
		}
		b.batches <- batch
	}
}

// take waits for queued inputs and removes the next batch from the queue (nextBatch); nil once the batcher
// is closed and its queue empty.
func (b *batcher) take() []*item {
	for {
		b.mu.Lock()
		if len(b.queue) > 0 {
			var batch []*item
			batch, b.queue = nextBatch(b.queue, windowBatches*b.maxRows, b.maxRows, b.maxTokens)
			b.mu.Unlock()
			return batch
		}
		closed := b.closed
		b.mu.Unlock()
		if closed {
			return nil
		}
		<-b.wake
	}
}

// nextBatch removes from queue (oldest first) the batch to run next, and returns it (shortest row first) and
// what is left of the queue, in its order. The batch holds the oldest input, so that none waits behind more
// batches than there are inputs ahead of it; the rest are those of the queue's oldest window inputs closest to
// it in length: the longest that are no longer than it, then, when those are too few, the shortest of the
// longer ones. So a batch pads little, as Infinity's length-sorted windows do, without leaving a long input
// behind newer short ones. It holds at most maxRows rows and maxTokens padded tokens (rows × longest row);
// one input is a batch on its own whatever its length.
func nextBatch(queue []*item, window, maxRows, maxTokens int) (batch, rest []*item) {
	w := queue[:min(len(queue), window)]
	order := make([]int, len(w)) // by length, the newer first among equal lengths: the oldest ends its length's run
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		if c := cmp.Compare(len(w[x].row.IDs), len(w[y].row.IDs)); c != 0 {
			return c
		}
		return cmp.Compare(y, x)
	})
	oldest := slices.Index(order, 0)
	k := min(maxRows, len(w))
	last := max(oldest, k-1) // the batch is order[last-k+1 : last+1]
	for k > 1 && k*len(w[order[last]].row.IDs) > maxTokens {
		k--
		last = max(oldest, k-1)
	}
	chosen := make([]bool, len(w))
	for _, i := range order[last-k+1 : last+1] {
		chosen[i] = true
		batch = append(batch, w[i])
	}
	rest = queue[:0]
	for i, it := range queue {
		if i >= len(w) || !chosen[i] {
			rest = append(rest, it)
		}
	}
	clear(queue[len(rest):]) // no item held past its batch
	return batch, rest
}

// infer runs the batches, on one goroutine locked to its OS thread for its whole life (libtorch's grad mode
// and autocast are per thread). Inputs whose client has gone are dropped before the forward pass.
func (b *batcher) infer() {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	defer close(b.done)
	var seq uint64
	for batch := range b.batches {
		seq++
		b.m.queued.Sub(float64(len(batch)))
		live := make([]*item, 0, len(batch))
		for _, it := range batch {
			if it.job.ctx.Err() != nil {
				b.m.dropped.Inc()
				b.resolve(it, nil, errGone)
				continue
			}
			live = append(live, it)
		}
		if len(live) == 0 {
			continue
		}
		rows := make([]models.Encoded, len(live))
		for k, it := range live {
			rows[k] = it.row
		}
		start := time.Now()
		vecs, err := b.run(rows)
		took := time.Since(start)
		b.m.inference.Observe(took.Seconds())
		b.m.batchRows.Observe(float64(len(rows)))
		b.m.batchTokens.Observe(float64(len(rows) * len(rows[len(rows)-1].IDs)))
		for k, it := range live {
			wait := start.Sub(it.queued)
			b.m.queue.Observe(wait.Seconds())
			j := it.job
			j.queue = max(j.queue, wait)
			if j.lastBatch != seq {
				j.inference += took
				j.lastBatch = seq
			}
			var v []float32
			if err == nil {
				v = vecs[k]
			}
			b.resolve(it, v, err)
		}
	}
}

// run is one forward pass; a panic below becomes its error.
func (b *batcher) run(rows []models.Encoded) (vecs [][]float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("forward pass panicked: %v", r)
		}
	}()
	vecs, err = b.embed(rows)
	if err == nil && len(vecs) != len(rows) {
		err = fmt.Errorf("forward pass gave %d vectors for %d rows", len(vecs), len(rows))
	}
	return vecs, err
}

// resolve records one input's result; the job's last input ends it and releases its room.
func (b *batcher) resolve(it *item, v []float32, err error) {
	j := it.job
	j.vecs[it.index] = v
	if err != nil && j.err == nil {
		j.err = err
	}
	if j.left--; j.left == 0 {
		b.release(len(j.vecs))
		close(j.done)
	}
}
