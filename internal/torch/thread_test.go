package torch

import (
	"syscall"
	"testing"
)

// Every job of a Thread runs on one OS thread, in order, and Do returns after its job.
func TestThreadRunsEveryJobOnOneOSThread(t *testing.T) {
	th := NewThread()
	var tids []int
	for i := 0; i < 50; i++ {
		th.Do(func() { tids = append(tids, syscall.Gettid()) })
	}
	if len(tids) != 50 {
		t.Fatalf("%d jobs ran before Do returned, want 50", len(tids))
	}
	for _, id := range tids {
		if id != tids[0] {
			t.Fatalf("jobs ran on threads %d and %d", tids[0], id)
		}
	}
}
