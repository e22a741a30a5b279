package trainer

import (
	"fmt"
	"testing"
)

// An epoch keeps its last partial batch as one more step when asked and when the rest gives every rank at
// least minLastRows examples (a contrastive loss needs a negative); the full steps stay as they were.
func TestEpochSteps(t *testing.T) {
	for _, tc := range []struct {
		n, perStep, world int
		keep              bool
		want              int
	}{
		{10, 4, 1, false, 2},
		{10, 4, 1, true, 3}, // 4, 4, 2 as torch's DataLoader(drop_last=False)
		{9, 4, 1, true, 2},  // a rest of 1 pair has no negative: dropped
		{12, 4, 1, true, 3}, // no rest
		{13, 4, 2, true, 3}, // 1 example over 2 ranks: dropped
		{14, 4, 2, true, 3}, // 2 over 2 ranks, 1 each: dropped
		{15, 4, 2, true, 3},
		{12, 8, 2, true, 2}, // 4 over 2 ranks, 2 each: kept
		{3, 4, 1, true, 1},  // no full step, a kept one
		{3, 4, 1, false, 0},
	} {
		if got := epochSteps(tc.n, tc.perStep, tc.world, tc.keep); got != tc.want {
			t.Errorf("epochSteps(%d, %d, %d, %v) = %d, want %d", tc.n, tc.perStep, tc.world, tc.keep, got, tc.want)
		}
	}
}

// A full step is grad_accumulation micro-batches of batch_size; a last partial one its full micro-batches and
// the rest, joined to the one before when it would leave a rank fewer than minLastRows examples.
func TestMicroBatches(t *testing.T) {
	for _, tc := range []struct {
		n, micro, perStep, world int
		want                     string
	}{
		{8, 2, 8, 1, "[[0 1] [2 3] [4 5] [6 7]]"},
		{4, 1, 4, 1, "[[0] [1] [2] [3]]"}, // a full step is never merged, whatever its micro-batches
		{2, 4, 4, 1, "[[0 1]]"},           // the last step of 4, 4, 2
		{5, 2, 8, 1, "[[0 1] [2 3 4]]"},   // a rest of 1 joins the micro-batch before it
		{6, 2, 8, 1, "[[0 1] [2 3] [4 5]]"},
		{6, 2, 8, 2, "[[0 1] [2 3 4 5]]"}, // 2 over 2 ranks, 1 each: joined
		{3, 4, 8, 1, "[[0 1 2]]"},
	} {
		idx := make([]int, tc.n)
		for i := range idx {
			idx[i] = i
		}
		if got := fmt.Sprint(microBatches(idx, tc.micro, tc.perStep, tc.world)); got != tc.want {
			t.Errorf("microBatches(%d examples, micro %d, step %d, world %d) = %s, want %s", tc.n, tc.micro, tc.perStep, tc.world, got, tc.want)
		}
	}
}
