package dialoguecse

import (
	"fmt"
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/objectives/tensors"
)

// cseTokens are the encoder's token matrices for a batch of B DialogueCSE examples: example i is a response
// r_i and its context C_i; every response of the batch can be paired with every context.
type cseTokens struct {
	resp     *ts.Tensor // [B,Tr,d]: the output embeddings of r_j (Eq. 2), one row per token
	respMask *ts.Tensor // [B,Tr]: 1 at real tokens, 0 at padding
	ctx      *ts.Tensor // [B,C,Tu,d]: the output embeddings of the context utterances of example i (Eq. 1), C turn slots
	ctxMask  *ts.Tensor // [B,C,Tu]: 1 at real tokens; a slot example i does not use is all 0
	cand     *ts.Tensor // bool [B,B]: (i,j) true when the pair of r_j under C_i is in example i's denominator (the diagonal is its positive)
}

// cseLoss is DialogueCSE's loss (§4.2-4.4) on token matrices. For every example i and response j:
//
//   - R̄_j is r_j's context-free embedding matrix (its padding rows zero) and Ū is one context utterance's
//     (Eq. 1-2, padding rows zero, so Padded tokens add nothing below);
//   - M = Ū R̄_jᵀ / √d (Eq. 3) and R̂ = M R̄_j (Eq. 4), one refined matrix per context turn of C_i;
//   - R̃_ij = Σ_t α_t R̂_t (Eq. 5) with α = softmax_t(FFN(R̂_t)) (Eq. 6, I1, when att is given) or
//     α_t = 1/(number of turns) (Eq. 7, I2);
//   - sim(R̄_j, R̃_ij) pools each matrix over its token rows (R̄_j over r_j's real tokens, R̃_ij over the rows
//     real in some turn of C_i) and takes the cosine. A pooling divisor scales a vector and leaves its cosine
//     as it is, so only the rows that are summed matter.
//
// (R̄_i, R̃_ii) is example i's positive pair and (R̄_j, R̃_ij) for the j ≠ i marked in cand its negatives:
// a response from elsewhere refined by the same context "through the completely identical process" (§3).
// The loss is NT-Xent (Eq. 8), the mean over the B examples of −log(e^{s_ii/τ} / Σ_{j∈cand(i)} e^{s_ij/τ}).
// It returns the loss (a scalar with its graph) and the similarities s [B,B] (detached). It runs in its
// caller's scope (torch.Scoped), where its intermediates are freed, and panics on a libtorch error.
//
// R̃_ij pools to a re-weighting of r_j's own rows, so s tells pairs apart only as far as those rows point
// different ways: an encoder whose token rows are near parallel (a random or briefly MLM-trained small one)
// gives every s ≈ 1, a loss of log(candidates) and a vanishing gradient, as cos is at its maximum. Hence the
// pretrained starting encoder (§5.3).
func cseLoss(x cseTokens, att *turnAttention, tau float64) (loss, sims *ts.Tensor) {
	resp, ctx := torch.Of(x.resp), torch.Of(x.ctx)
	dtype := resp.DType()
	rs, cs := resp.Size(), ctx.Size()
	b, tr, d := rs[0], rs[1], rs[2]
	c, tu := cs[1], cs[2]

	rm := torch.Of(x.respMask).Cast(dtype).Unsqueeze(-1) // [B,Tr,1]
	r := resp.Mul(rm)                                    // R̄
	um := torch.Of(x.ctxMask).Cast(dtype)                // [B,C,Tu]
	u := ctx.Mul(um.Unsqueeze(-1))                       // Ū

	// Eq. 3 for every (context utterance of example i, response j) at once: [B_i·C·Tu, B_j·Tr].
	m := torch.Term(func() torch.Tensor {
		return u.View(b*c*tu, d).Mm(r.View(b*tr, d).T()).DivScalar(math.Sqrt(float64(d)))
	})
	// Eq. 4 per response j: [B_j, B_i·C·Tu, Tr] × R̄_j [Tr,d], then back to [B_i, B_j, C, Tu, d].
	rhat := m.View(b*c*tu, b, tr).Permute(1, 0, 2).Bmm(r).View(b, b, c, tu, d).Permute(1, 0, 2, 3, 4)

	// The turn weights α [B_i, B_j, C] (Eq. 6 or Eq. 7); slots without a turn get weight 0.
	tokens := um.SumDim(2, false, dtype) // [B,C]: real tokens per turn
	turn := tokens.Gt(0)                 // bool [B,C]
	var alpha torch.Tensor
	if att != nil {
		n := tokens.ClampMin(1).Unsqueeze(1).Unsqueeze(-1) // [B,1,C,1]
		pooled := rhat.SumDim(3, false, dtype).Div(n)      // [B,B,C,d]
		alpha = att.score(pooled).MaskedFill(turn.Not().Unsqueeze(1), math.Inf(-1)).Softmax(2, dtype)
	} else {
		w := turn.Cast(dtype)
		alpha = w.Div(w.SumDim(1, true, dtype).ClampMin(1)).Unsqueeze(1) // [B,1,C], the same for every j
	}

	// Eq. 5 / 7: R̃_ij = Σ_t α_t R̂_t, [B_i, B_j, Tu, d]; pooled over the rows real in some turn of C_i.
	slots := um.Amax(1).SumDim(1, false, dtype).ClampMin(1).View(b, 1, 1) // [B,1,1]
	ptil := torch.Term(func() torch.Tensor {
		rtil := rhat.Mul(alpha.Unsqueeze(-1).Unsqueeze(-1)).SumDim(2, false, dtype)
		return rtil.SumDim(2, false, dtype).Div(slots) // [B_i,B_j,d]
	})
	pbar := r.SumDim(1, false, dtype).Div(rm.SumDim(1, false, dtype).ClampMin(1)) // [B_j,d]

	// sim = cosine of the pooled vectors: s_ij = cos(R̄_j, R̃_ij).
	s := tensors.Unit(ptil).Mul(tensors.Unit(pbar).Unsqueeze(0)).SumDim(2, false, dtype) // [B,B]

	// Eq. 8: −log softmax over example i's candidates, at its positive.
	logits := s.DivScalar(tau).MaskedFill(torch.Of(x.cand).Not(), math.Inf(-1))
	return logits.Logsumexp(1).Sub(logits.Diagonal(0, 0, 1)).Mean(dtype).Raw(), s.Detach().Raw()
}

// check checks the shapes cseLoss relies on and returns B.
func (x cseTokens) check() (int64, error) {
	for _, t := range []*ts.Tensor{x.resp, x.respMask, x.ctx, x.ctxMask, x.cand} {
		if t == nil {
			return 0, fmt.Errorf("a token matrix or mask is missing")
		}
	}
	rs, cs := sizeOf(x.resp), sizeOf(x.ctx)
	if len(rs) != 3 || len(cs) != 4 || cs[0] != rs[0] || cs[3] != rs[2] {
		return 0, fmt.Errorf("responses must be [B,T,d] and contexts [B,C,T,d], got %v and %v", rs, cs)
	}
	if s := sizeOf(x.respMask); len(s) != 2 || s[0] != rs[0] || s[1] != rs[1] {
		return 0, fmt.Errorf("response mask is %v, want [%d %d]", s, rs[0], rs[1])
	}
	if s := sizeOf(x.ctxMask); len(s) != 3 || s[0] != cs[0] || s[1] != cs[1] || s[2] != cs[2] {
		return 0, fmt.Errorf("context mask is %v, want %v", s, cs[:3])
	}
	if s := sizeOf(x.cand); len(s) != 2 || s[0] != rs[0] || s[1] != rs[0] || x.cand.DType() != gotch.Bool {
		return 0, fmt.Errorf("candidates must be bool [%d %d], got %v %v", rs[0], rs[0], x.cand.DType(), s)
	}
	return rs[0], nil
}

// sizeOf is x's shape, or nil when libtorch cannot say.
func sizeOf(x *ts.Tensor) []int64 {
	s, _ := x.Size()
	return s
}
