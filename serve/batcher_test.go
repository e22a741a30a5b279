package serve

import (
	"context"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"convrep/models"
)

// row is an input of n tokens whose first id is id.
func row(id, n int) models.Encoded {
	ids := make([]int64, n)
	ids[0] = int64(id)
	return models.Encoded{IDs: ids, TypeIDs: make([]int64, n), Full: n}
}

// A batch holds the oldest input and, from the window, the inputs closest to it in length, within both
// bounds; the rest of the queue keeps its order.
func TestNextBatch(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		lengths                    []int // the queue, oldest first
		window, maxRows, maxTokens int
		batch                      []int // the batch's queue positions, shortest row first
	}{
		{"one", []int{5}, 8, 4, 100, []int{0}},
		{"all fit", []int{30, 2, 10, 3}, 8, 8, 1000, []int{1, 3, 2, 0}},
		{"long oldest: the longest shorter ones", []int{30, 2, 10, 3, 29}, 8, 2, 1000, []int{4, 0}},
		{"short oldest: the shortest longer ones", []int{2, 30, 10, 3, 29}, 8, 3, 1000, []int{0, 3, 2}},
		{"ties: the oldest is in", []int{8, 8, 8, 8, 8}, 8, 2, 1000, []int{1, 0}},
		{"the window bounds the choice, the older first among equals", []int{30, 9, 9, 29, 28}, 3, 2, 1000, []int{1, 0}},
		{"token budget", []int{30, 2, 10, 3}, 8, 8, 30, []int{0}},
		{"token budget, short oldest", []int{3, 2, 10, 30}, 8, 8, 30, []int{1, 0, 2}},
		{"over the budget alone", []int{64, 64}, 8, 8, 32, []int{0}},
	} {
		var queue []*item
		for i, n := range tc.lengths {
			queue = append(queue, &item{index: i, row: row(i, n)})
		}
		batch, rest := nextBatch(slices.Clone(queue), tc.window, tc.maxRows, tc.maxTokens)
		var got, left []int
		for _, it := range batch {
			got = append(got, it.index)
		}
		for _, it := range rest {
			left = append(left, it.index)
		}
		var want []int
		for i := range tc.lengths {
			if !slices.Contains(tc.batch, i) {
				want = append(want, i)
			}
		}
		if !slices.Equal(got, tc.batch) || !slices.Equal(left, want) {
			t.Errorf("%s: batch %v, rest %v; want %v, %v", tc.name, got, left, tc.batch, want)
		}
	}
}

// Drained batch by batch, a queue of mixed lengths runs every input once, each batch holding the oldest
// input left, and pads less than batches cut in arrival order.
func TestNextBatchDrains(t *testing.T) {
	var queue []*item
	real := 0
	for i := range 1000 {
		n := 3 + (i*7919)%30
		real += n
		queue = append(queue, &item{index: i, row: row(i, n)})
	}
	arrival := 0
	for i := 0; i < len(queue); i += 64 {
		longest := 0
		for _, it := range queue[i:min(i+64, len(queue))] {
			longest = max(longest, len(it.row.IDs))
		}
		arrival += longest * (min(i+64, len(queue)) - i)
	}
	padded, seen := 0, map[int]bool{}
	for len(queue) > 0 {
		oldest := queue[0].index
		var batch []*item
		batch, queue = nextBatch(queue, 8*64, 64, 16384)
		if !slices.ContainsFunc(batch, func(it *item) bool { return it.index == oldest }) {
			t.Fatalf("a batch without the oldest input %d", oldest)
		}
		for _, it := range batch {
			if seen[it.index] {
				t.Fatalf("input %d ran twice", it.index)
			}
			seen[it.index] = true
		}
		padded += len(batch) * len(batch[len(batch)-1].row.IDs)
	}
	if len(seen) != 1000 {
		t.Fatalf("%d inputs ran, want 1000", len(seen))
	}
	t.Logf("padded tokens: %d chosen, %d in arrival order, %d real", padded, arrival, real)
	if float64(padded) > 1.15*float64(real) || padded >= arrival {
		t.Errorf("padded tokens %d: want at most 15%% over the real %d and under arrival order's %d", padded, real, arrival)
	}
}

// fakeEmbed returns, for each row, [first id, length] and records the OS thread each pass ran on.
type fakeEmbed struct {
	mu      sync.Mutex
	threads map[int]bool
	rows    [][]int64
	panicAt int64 // a first id that panics the pass
}

func (f *fakeEmbed) embed(rows []models.Encoded) ([][]float32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.threads == nil {
		f.threads = map[int]bool{}
	}
	f.threads[syscall.Gettid()] = true
	out := make([][]float32, len(rows))
	for i, r := range rows {
		if f.panicAt != 0 && r.IDs[0] == f.panicAt {
			panic("boom")
		}
		f.rows = append(f.rows, r.IDs)
		out[i] = []float32{float32(r.IDs[0]), float32(len(r.IDs))}
	}
	return out, nil
}

func TestBatcherAnswersEveryJobOnOneThread(t *testing.T) {
	f := &fakeEmbed{}
	b := newBatcher(f.embed, 64, 4, 1000, newMetrics())
	b.start()
	defer b.close()
	var wg sync.WaitGroup
	for j := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows := []models.Encoded{row(1000+j, 1+j%7), row(2000+j, 20-j%13), row(3000+j, 3)}
			if !b.admit(len(rows)) {
				t.Errorf("job %d not admitted", j)
				return
			}
			vecs, err := b.submit(context.Background(), rows).wait()
			if err != nil {
				t.Errorf("job %d: %v", j, err)
				return
			}
			for i, r := range rows {
				if want := []float32{float32(r.IDs[0]), float32(len(r.IDs))}; !slices.Equal(vecs[i], want) {
					t.Errorf("job %d row %d: %v, want %v", j, i, vecs[i], want)
				}
			}
		}()
	}
	wg.Wait()
	if len(f.threads) != 1 {
		t.Errorf("forward passes ran on %d OS threads, want 1", len(f.threads))
	}
	if n := b.inFlight.Load(); n != 0 {
		t.Errorf("%d inputs still counted in flight after every job ended", n)
	}
}

// Admission is bounded: beyond the limit a job is refused at once; its end frees the room.
func TestBatcherAdmit(t *testing.T) {
	b := newBatcher((&fakeEmbed{}).embed, 64, 4, 3, newMetrics())
	b.start()
	defer b.close()
	if !b.admit(2) || b.admit(2) || !b.admit(1) || b.admit(1) {
		t.Fatal("admit does not hold the limit of 3")
	}
	b.release(1)
	if _, err := b.submit(context.Background(), []models.Encoded{row(1, 2), row(2, 2)}).wait(); err != nil {
		t.Fatal(err)
	}
	if !b.admit(3) {
		t.Error("the room of an answered job was not freed")
	}
}

// A job whose context ended is dropped before its forward pass, and counted.
func TestBatcherDropsGoneJobs(t *testing.T) {
	f := &fakeEmbed{}
	m := newMetrics()
	b := newBatcher(f.embed, 64, 4, 100, m)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.admit(2)
	gone := b.submit(ctx, []models.Encoded{row(7, 3), row(8, 3)})
	b.admit(1)
	live := b.submit(context.Background(), []models.Encoded{row(9, 3)})
	b.start()
	defer b.close()
	if _, err := gone.wait(); err != errGone {
		t.Errorf("gone job: %v, want errGone", err)
	}
	if _, err := live.wait(); err != nil {
		t.Fatal(err)
	}
	<-gone.done // its inputs are resolved (dropped) too
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.rows) != 1 || f.rows[0][0] != 9 {
		t.Errorf("forward passes saw %v, want only row 9", f.rows)
	}
	if got := value(t, m.dropped); got != 2 {
		t.Errorf("dropped inputs %v, want 2", got)
	}
}

// A panicking forward pass fails its batch's jobs; the batcher keeps running.
func TestBatcherSurvivesAPanic(t *testing.T) {
	f := &fakeEmbed{panicAt: 66}
	b := newBatcher(f.embed, 64, 4, 100, newMetrics())
	b.start()
	defer b.close()
	b.admit(1)
	if _, err := b.submit(context.Background(), []models.Encoded{row(66, 2)}).wait(); err == nil {
		t.Error("a panicking pass gave no error")
	}
	b.admit(1)
	if _, err := b.submit(context.Background(), []models.Encoded{row(5, 2)}).wait(); err != nil {
		t.Errorf("after a panic: %v", err)
	}
}

// After close, a job is refused with errStopped and its room freed.
func TestBatcherClosed(t *testing.T) {
	b := newBatcher((&fakeEmbed{}).embed, 64, 4, 2, newMetrics())
	b.start()
	b.close()
	b.admit(2)
	if _, err := b.submit(context.Background(), []models.Encoded{row(1, 1), row(2, 1)}).wait(); err != errStopped {
		t.Errorf("after close: %v, want errStopped", err)
	}
	if b.inFlight.Load() != 0 {
		t.Error("a refused job kept its room")
	}
}

// value reads a counter or gauge.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}
