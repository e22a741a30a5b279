package trainer

import "convrep/experiment"

// minLastRows is the fewest examples per rank that a kept last partial batch must hold: a single pair gives a
// contrastive loss no negative (the DSE authors' HardNeg loss is NaN there, a mean over no negatives), so a
// smaller rest is dropped even when the last batch is kept.
const minLastRows = 2

// keepLast is whether the run keeps each epoch's last partial batch (train.drop_last false, which
// experiment.Load resolves from the objective when the file leaves it out); unset reads as dropping it.
func keepLast(tc experiment.TrainConfig) bool { return tc.DropLast != nil && !*tc.DropLast }

// epochSteps is the optimiser steps in an epoch of n examples at perStep a step: the full steps and, with
// keep, one more for the rest when it gives each of world ranks at least minLastRows examples, as torch's
// DataLoader(drop_last=False) ends an epoch with a smaller batch.
func epochSteps(n, perStep, world int, keep bool) int {
	full := n / perStep
	if rest := n - full*perStep; keep && rest/max(world, 1) >= minLastRows {
		return full + 1
	}
	return full
}

// microBatches cuts one step's examples into micro-batches of micro each. A full step (perStep examples)
// gives grad_accumulation of them; the last partial step gives its full ones and then the rest, which joins
// the micro-batch before it when it would give a rank fewer than minLastRows examples.
func microBatches(idx []int, micro, perStep, world int) [][]int {
	var out [][]int
	partial := len(idx) < perStep
	for len(idx) > 0 {
		n := min(micro, len(idx))
		if rest := len(idx) - n; partial && rest > 0 && rest/max(world, 1) < minLastRows {
			n = len(idx)
		}
		out, idx = append(out, idx[:n]), idx[n:]
	}
	return out
}
