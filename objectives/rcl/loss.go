package rcl

import (
	"fmt"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/objectives/tensors"
)

// Loss is TOD-BERT's response contrastive loss (Wu et al. 2020, §2.2): for context representations
// C [b,d] and response representations R [n,d] (n ≥ b; row i of R is the response of context i, rows past
// b are extra negatives), M = Softmax(C Rᵀ) row-wise and L_rcl = −(1/b) Σ_i log M_{i,i}. The scores are
// plain dot products of the [CLS] vectors, without normalisation or temperature, as in the paper and its
// code (which averages over the batch, torch's CrossEntropyLoss). The scores and the cross-entropy are
// computed in fp32 under mixed precision (tensors.FP32). The result keeps its graph.
func Loss(c, r *ts.Tensor) (*ts.Tensor, error) {
	if c == nil || r == nil {
		return nil, fmt.Errorf("rcl loss: both the contexts and the responses are required")
	}
	cs, err1 := c.Size()
	rs, err2 := r.Size()
	if err1 != nil || err2 != nil || len(cs) != 2 || len(rs) != 2 || cs[1] != rs[1] {
		return nil, fmt.Errorf("rcl loss: contexts %v and responses %v must be [b,d] and [n,d]", cs, rs)
	}
	if cs[0] < 1 || rs[0] < cs[0] || rs[0] < 2 {
		return nil, fmt.Errorf("rcl loss: %d contexts need as many responses and a negative, got %d responses", cs[0], rs[0])
	}
	var loss *ts.Tensor
	err := tensors.FP32("rcl loss", func(keep torch.Keep) error {
		scores := tensors.Upcast(torch.Of(c)).Mm(tensors.Upcast(torch.Of(r)).T()) // [b,n]: M before its softmax
		loss = keep(tensors.CrossEntropyDiagonal(scores))
		return nil
	})
	return loss, err
}
