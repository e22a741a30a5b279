package objectives

import (
	"fmt"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// GatherViews gathers two row-aligned views ([n,d] each, row i of a paired with row i of b) into the global
// batch's ([Wn,d] each, still aligned). With no gather it returns them as they are; drop frees what it made.
func GatherViews(g Gather, a, b *ts.Tensor) (ga, gb *ts.Tensor, drop func(), err error) {
	if g == nil {
		return a, b, func() {}, nil
	}
	if ga, err = g(a); err != nil {
		return nil, nil, nil, fmt.Errorf("global batch: %w", err)
	}
	if gb, err = g(b); err != nil {
		ga.MustDrop()
		return nil, nil, nil, fmt.Errorf("global batch: %w", err)
	}
	return ga, gb, func() { torch.Drop(ga, gb) }, nil
}

// GatherPairs turns this rank's [2n,d] pair features z (n anchors, then their n partners) and optional
// pair marks into the global batch's: [2Wn,d] with all anchors first, in rank order, then all partners.
// With no gather it returns its inputs.
func GatherPairs(g Gather, z *ts.Tensor, n int64, marks *ts.Tensor) (*ts.Tensor, int64, *ts.Tensor, func(), error) {
	if g == nil {
		return z, n, marks, func() {}, nil
	}
	var all, allMarks *ts.Tensor
	err := torch.Catch("gather pairs", func() error {
		anchors := z.MustNarrow(0, 0, n, false)
		partners := z.MustNarrow(0, n, n, false)
		defer torch.Drop(anchors, partners)
		ga, gp, drop, err := GatherViews(g, anchors, partners)
		if err != nil {
			return err
		}
		all = ts.MustCat([]*ts.Tensor{ga, gp}, 0)
		drop()
		if marks != nil {
			if allMarks, err = g(marks); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		torch.Drop(all, allMarks)
		return nil, 0, nil, nil, fmt.Errorf("global batch: %w", err)
	}
	return all, all.MustSize()[0] / 2, allMarks, func() { torch.Drop(all, allMarks) }, nil
}
