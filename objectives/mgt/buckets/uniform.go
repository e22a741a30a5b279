package buckets

import (
	"convrep/datasets"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Uniform draws k−1 distinct negatives per example uniformly from the pool without the ground truth (MGT
// Eq. 8, the baseline and the plain ensemble). stream tells ensemble members apart; each example's draws
// depend on (seed, stream, example) only. The result has one segment.
func Uniform(poolSize int, gts []int32, negatives int, seed int64, stream int) (*Negatives, error) {
	if negatives < 1 || poolSize-1 < negatives {
		return nil, fmt.Errorf("buckets: %d distinct negatives from a pool of %d", negatives, poolSize)
	}
	if stream < 1 {
		return nil, fmt.Errorf("buckets: stream %d: streams count from 1 (0 belongs to Build)", stream)
	}
	out := &Negatives{Examples: len(gts), Segments: 1, PerSegment: negatives, Idx: make([]int32, len(gts)*negatives)}
	for e, gt := range gts {
		if gt < 0 || int(gt) >= poolSize {
			return nil, fmt.Errorf("buckets: example %d: ground truth %d outside the pool of %d", e, gt, poolSize)
		}
		g := generator(seed, uint64(stream), uint64(e))
		dst := out.Of(e, 1)
		for j := range dst {
			dst[j] = fresh(g, poolSize, gt, dst[:j])
		}
	}
	return out, nil
}

// fresh draws a pool index other than gt and those in taken; k−1 is far below the pool size, so a redraw is
// rare.
func fresh(g *rand.PCG, n int, gt int32, taken []int32) int32 {
	for {
		x := int32(datasets.BoundedDraw(g, uint64(n)))
		if x != gt && !slices.Contains(taken, x) {
			return x
		}
	}
}
