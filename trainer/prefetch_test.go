package trainer

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/experiment"
	"convrep/objectives"
)

// countedData is a dataset whose batches are one tensor of their indices; it counts the batches alive and
// notes the epoch each batch was built in.
type countedData struct {
	n      int
	failAt int // the example whose batch fails; -1 for none
	epoch  int
	live   atomic.Int64
	built  [][]int // the indices of each batch built, with the epoch appended
}

func (d *countedData) Len() int           { return d.n }
func (d *countedData) SetEpoch(epoch int) { d.epoch = epoch }

func (d *countedData) Batch(idx []int, dev gotch.Device) (objectives.Batch, error) {
	if slices.Contains(idx, d.failAt) {
		return objectives.Batch{}, fmt.Errorf("example %d is damaged", d.failAt)
	}
	d.built = append(d.built, append(slices.Clone(idx), d.epoch))
	ids := make([]int64, len(idx))
	for i, j := range idx {
		ids[i] = int64(j)
	}
	x := ts.MustOfSlice(ids)
	d.live.Add(1)
	return objectives.Batch{Value: x, Drop: func() { x.MustDrop(); d.live.Add(-1) }}, nil
}

// prefetchTrainer is the part of a Trainer the prefetcher reads: batches of 2 rows, 2 micro-batches a step.
func prefetchTrainer(d *countedData) *Trainer {
	e := &experiment.Experiment{Train: experiment.TrainConfig{BatchSize: 2, GradAccumulation: 2}}
	return &Trainer{exp: e, data: d, Stepper: Stepper{cl: &cluster{env: distEnv{World: 1}}, dev: gotch.CPU}}
}

func TestPrefetcherGivesTheStepsInOrder(t *testing.T) {
	d := &countedData{n: 16, failAt: -1}
	tr := prefetchTrainer(d)
	order := []int{15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}
	p := tr.prefetch(order, 3, 1, 4) // steps 1..3 of epoch 3: examples 11..0 in micro-batches of 2
	var got [][]int64
	for range 3 {
		mbs, _, err := p.next()
		if err != nil {
			t.Fatal(err)
		}
		if len(mbs) != 2 {
			t.Fatalf("%d micro-batches, want 2", len(mbs))
		}
		for _, mb := range mbs {
			got = append(got, mb.Value.(*ts.Tensor).Int64Values())
		}
		dropBatches(mbs)
	}
	if _, _, err := p.next(); !errors.Is(err, errPrefetchEnded) {
		t.Errorf("a fourth step: %v, want errPrefetchEnded", err)
	}
	p.close()
	want := "[[11 10] [9 8] [7 6] [5 4] [3 2] [1 0]]"
	if fmt.Sprint(got) != want {
		t.Errorf("batches %v, want %s", got, want)
	}
	for _, b := range d.built {
		if b[len(b)-1] != 3 {
			t.Errorf("batch %v built in epoch %d, want 3 (the prefetcher sets the epoch before building)", b[:len(b)-1], b[len(b)-1])
		}
	}
	if n := d.live.Load(); n != 0 {
		t.Errorf("%d batches left alive", n)
	}
}

// A stop with a step built and not taken drops it; the builder goes no further than one step ahead.
func TestPrefetcherDropsWhatIsNotTaken(t *testing.T) {
	d := &countedData{n: 16, failAt: -1}
	tr := prefetchTrainer(d)
	p := tr.prefetch(seq(16), 0, 0, 4)
	mbs, _, err := p.next()
	if err != nil {
		t.Fatal(err)
	}
	dropBatches(mbs)
	for range 100 { // let the builder run ahead as far as it can
		runtime.Gosched()
	}
	p.close()
	if n := d.live.Load(); n != 0 {
		t.Errorf("%d batches left alive after close", n)
	}
	if len(d.built) > 4 {
		t.Errorf("%d micro-batches built for one step taken, want at most 4 (one step ahead)", len(d.built))
	}
}

// An error building a step comes with that step; the micro-batches built before it in the step are dropped.
func TestPrefetcherReportsTheFailingStep(t *testing.T) {
	d := &countedData{n: 16, failAt: 6} // step 1's second micro-batch
	tr := prefetchTrainer(d)
	p := tr.prefetch(seq(16), 0, 0, 4)
	defer p.close()
	mbs, _, err := p.next()
	if err != nil {
		t.Fatalf("step 0: %v", err)
	}
	dropBatches(mbs)
	if mbs, _, err = p.next(); err == nil || mbs != nil {
		t.Fatalf("step 1: %d batches, error %v; want none and the dataset's error", len(mbs), err)
	}
	if n := d.live.Load(); n != 0 {
		t.Errorf("%d batches left alive", n)
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
