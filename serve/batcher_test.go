package serve

import (
	"context"
	"fmt"
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

// Batches are cut from the window sorted by length, within both bounds, and hold every input once.
func TestCutBatches(t *testing.T) {
	for _, tc := range []struct {
		lengths            []int
		maxRows, maxTokens int
		want               [][]int // lengths per batch
	}{
		{[]int{5}, 4, 100, [][]int{{5}}},
		{[]int{30, 2, 10, 3}, 8, 1000, [][]int{{2, 3, 10, 30}}},
		{[]int{30, 2, 10, 3}, 2, 1000, [][]int{{2, 3}, {10, 30}}},
		{[]int{30, 2, 10, 3}, 8, 30, [][]int{{2, 3, 10}, {30}}},
		{[]int{8, 8, 8, 8, 8}, 8, 16, [][]int{{8, 8}, {8, 8}, {8}}},
		{[]int{64, 64}, 8, 64, [][]int{{64}, {64}}},
	} {
		var window []*item
		for i, n := range tc.lengths {
			window = append(window, &item{index: i, row: row(i, n)})
		}
		var got [][]int
		seen := map[int]bool{}
		for _, b := range cutBatches(window, tc.maxRows, tc.maxTokens) {
			var lengths []int
			for _, it := range b {
				lengths = append(lengths, len(it.row.IDs))
				seen[it.index] = true
			}
			got = append(got, lengths)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(seen) != len(tc.lengths) {
			t.Errorf("lengths %v, rows ≤ %d, tokens ≤ %d: batches %v, want %v", tc.lengths, tc.maxRows, tc.maxTokens, got, tc.want)
		}
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
