package mgt

import (
	"fmt"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/objectives/tensors"
)

// CandidateScores are the dual encoder's scores α_ij = c_iᵀ r_ij (MGT §3.1, Eq. 4-5) of B contexts c [B,d]
// against their k candidates each, r [B·k,d] (rows i·k … i·k+k−1 belong to context i): a [B,k] tensor,
// computed in fp32 under mixed precision (tensors.FP32), as the loss on it is.
func CandidateScores(c, r *ts.Tensor, k int64) (*ts.Tensor, error) {
	b, err := candidateShapes(c, r, k)
	if err != nil {
		return nil, fmt.Errorf("candidate scores: %w", err)
	}
	var out *ts.Tensor
	err = tensors.FP32("candidate scores", func(keep torch.Keep) error {
		out = keep(candidateScores(torch.Of(c), torch.Of(r), b, k))
		return nil
	})
	return out, err
}

// candidateScores is Eq. 4-5 on checked shapes, in its caller's scope.
func candidateScores(c, r torch.Tensor, b, k int64) torch.Tensor {
	d := c.Size()[1]
	rows := tensors.Upcast(r).View(b, k, d) // [B,k,d]: r_ij
	col := tensors.Upcast(c).Unsqueeze(2)   // [B,d,1]: c_i
	return rows.Bmm(col).SqueezeDim(2)      // [B,k]: c_iᵀ r_ij
}

// DualEncoderLoss is Eq. 6 of MGT averaged over the batch: with the ground truth first among each context's
// k candidates, ℓ_i = −log(exp(α_i,gt) / (exp(α_i,gt) + Σ_{j=1}^{k−1} exp(α_i,j))) = LSE_j(α_ij) − α_i0.
// It also returns the scores [B,k] (for accuracy); both keep their graph and the caller drops them.
func DualEncoderLoss(c, r *ts.Tensor, k int64) (loss, scores *ts.Tensor, err error) {
	b, err := candidateShapes(c, r, k)
	if err != nil {
		return nil, nil, fmt.Errorf("dual encoder loss: candidate scores: %w", err)
	}
	err = tensors.FP32("dual encoder loss", func(keep torch.Keep) error {
		alpha := candidateScores(torch.Of(c), torch.Of(r), b, k)
		l := alpha.Logsumexp(1).Sub(alpha.Select(1, 0)).Mean(tensors.LossDType(alpha)) // mean_i LSE_j(α_ij) − α_i0
		loss, scores = keep(l), keep(alpha)
		return nil
	})
	return loss, scores, err
}

// candidateShapes checks c [B,d] and r [B·k,d] and returns B.
func candidateShapes(c, r *ts.Tensor, k int64) (int64, error) {
	if c == nil || r == nil {
		return 0, fmt.Errorf("both the context and the candidate embeddings are required")
	}
	if k < 2 {
		return 0, fmt.Errorf("%d candidates per context: need the ground truth and a negative", k)
	}
	cs, err1 := c.Size()
	rs, err2 := r.Size()
	if err1 != nil || err2 != nil || len(cs) != 2 || len(rs) != 2 {
		return 0, fmt.Errorf("embeddings must be [rows, dim], got %v and %v", cs, rs)
	}
	if cs[1] != rs[1] || rs[0] != cs[0]*k {
		return 0, fmt.Errorf("%v contexts need [%d,%d] candidates (k=%d), got %v", cs, cs[0]*k, cs[1], k, rs)
	}
	if c.DType() != r.DType() {
		return 0, fmt.Errorf("context and candidate dtypes differ: %v and %v", c.DType(), r.DType())
	}
	return cs[0], nil
}
