package dialoguecse

import (
	"convrep/objectives/tensors"
	"fmt"
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
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
// It returns the loss (a scalar with its graph) and the similarities s [B,B] (detached). It panics on a
// libtorch error (callers Catch).
//
// R̃_ij pools to a re-weighting of r_j's own rows, so s tells pairs apart only as far as those rows point
// different ways: an encoder whose token rows are near parallel (a random or briefly MLM-trained small one)
// gives every s ≈ 1, a loss of log(candidates) and a vanishing gradient, as cos is at its maximum. Hence the
// pretrained starting encoder (§5.3).
func cseLoss(x cseTokens, att *turnAttention, tau float64) (loss, sims *ts.Tensor) {
	dtype := x.resp.DType()
	rs, cs := x.resp.MustSize(), x.ctx.MustSize()
	b, tr, d := rs[0], rs[1], rs[2]
	c, tu := cs[1], cs[2]

	rm := x.respMask.MustTotype(dtype, false).MustUnsqueeze(-1, true) // [B,Tr,1]
	r := x.resp.MustMul(rm, false)                                    // R̄
	um := x.ctxMask.MustTotype(dtype, false)                          // [B,C,Tu]
	umx := um.MustUnsqueeze(-1, false)
	u := x.ctx.MustMul(umx, false) // Ū
	umx.MustDrop()

	// Eq. 3 for every (context utterance of example i, response j) at once: [B_i·C·Tu, B_j·Tr].
	uf := u.MustView([]int64{b * c * tu, d}, true)
	rf := r.MustView([]int64{b * tr, d}, false)
	rft := rf.MustT(true)
	m := uf.MustMm(rft, true).MustDivScalar(ts.FloatScalar(math.Sqrt(float64(d))), true)
	rft.MustDrop()
	// Eq. 4 per response j: [B_j, B_i·C·Tu, Tr] × R̄_j [Tr,d], then back to [B_i, B_j, C, Tu, d].
	m = m.MustView([]int64{b * c * tu, b, tr}, true).MustPermute([]int64{1, 0, 2}, true)
	rhat := m.MustBmm(r, true).MustView([]int64{b, b, c, tu, d}, true).MustPermute([]int64{1, 0, 2, 3, 4}, true)

	// The turn weights α [B_i, B_j, C] (Eq. 6 or Eq. 7); slots without a turn get weight 0.
	tokens := um.MustSumDimIntlist([]int64{2}, false, dtype, false) // [B,C]: real tokens per turn
	turn := tokens.MustGt(ts.FloatScalar(0), false)                 // bool [B,C]
	var alpha *ts.Tensor
	if att != nil {
		n := tokens.MustClampMin(ts.FloatScalar(1), false).MustUnsqueeze(1, true).MustUnsqueeze(-1, true) // [B,1,C,1]
		pooled := rhat.MustSumDimIntlist([]int64{3}, false, dtype, false).MustDiv(n, true)                // [B,B,C,d]
		n.MustDrop()
		score := att.score(pooled) // [B,B,C]
		pooled.MustDrop()
		off := turn.MustLogicalNot(false).MustUnsqueeze(1, true)
		alpha = score.MustMaskedFill(off, ts.FloatScalar(math.Inf(-1)), true).MustSoftmax(2, dtype, true)
		off.MustDrop()
	} else {
		w := turn.MustTotype(dtype, false)
		count := w.MustSumDimIntlist([]int64{1}, true, dtype, false).MustClampMin(ts.FloatScalar(1), true)
		alpha = w.MustDiv(count, true).MustUnsqueeze(1, true) // [B,1,C], the same for every j
		count.MustDrop()
	}
	turn.MustDrop()
	tokens.MustDrop()

	// Eq. 5 / 7: R̃_ij = Σ_t α_t R̂_t, [B_i, B_j, Tu, d]; pooled over its rows.
	a := alpha.MustUnsqueeze(-1, true).MustUnsqueeze(-1, true)
	rtil := rhat.MustMul(a, true).MustSumDimIntlist([]int64{2}, false, dtype, true)
	a.MustDrop()
	slots := um.MustAmax([]int64{1}, false, false).MustSumDimIntlist([]int64{1}, false, dtype, true) // [B]: rows real in some turn
	um.MustDrop()
	slots = slots.MustClampMin(ts.FloatScalar(1), true).MustView([]int64{b, 1, 1}, true)
	ptil := rtil.MustSumDimIntlist([]int64{2}, false, dtype, true).MustDiv(slots, true) // [B_i,B_j,d]
	slots.MustDrop()
	n := rm.MustSumDimIntlist([]int64{1}, false, dtype, true).MustClampMin(ts.FloatScalar(1), true) // [B,1]
	pbar := r.MustSumDimIntlist([]int64{1}, false, dtype, true).MustDiv(n, true)                    // [B_j,d]
	n.MustDrop()

	// sim = cosine of the pooled vectors: s_ij = cos(R̄_j, R̃_ij).
	ubar, util := unitRows(pbar), unitRows(ptil)
	pbar.MustDrop()
	ptil.MustDrop()
	s := util.MustMul(ubar.MustUnsqueeze(0, true), true).MustSumDimIntlist([]int64{2}, false, dtype, true) // [B,B]

	// Eq. 8: −log softmax over example i's candidates, at its positive.
	logits := s.MustDivScalar(ts.FloatScalar(tau), false)
	off := x.cand.MustLogicalNot(false)
	logits = logits.MustMaskedFill(off, ts.FloatScalar(math.Inf(-1)), true)
	off.MustDrop()
	pos := logits.MustDiagonal(0, 0, 1, false)
	perExample := logits.MustLogsumexp([]int64{1}, false, true).MustSub(pos, true)
	pos.MustDrop()
	loss = perExample.MustMean(dtype, true)
	sims = s.MustDetach(true)
	return loss, sims
}

// unitRows divides x [..., d] by max(‖x‖₂, 1e-12) along its last dimension (F.normalize).
func unitRows(x *ts.Tensor) *ts.Tensor {
	nrm := x.MustNormScalaroptDim(ts.FloatScalar(2), []int64{-1}, true, false).MustClampMin(ts.FloatScalar(tensors.NormEps), true)
	out := x.MustDiv(nrm, false)
	nrm.MustDrop()
	return out
}

// check checks the shapes cseLoss relies on and returns B.
func (x cseTokens) check() (int64, error) {
	for _, t := range []*ts.Tensor{x.resp, x.respMask, x.ctx, x.ctxMask, x.cand} {
		if t == nil {
			return 0, fmt.Errorf("a token matrix or mask is missing")
		}
	}
	rs, cs := x.resp.MustSize(), x.ctx.MustSize()
	if len(rs) != 3 || len(cs) != 4 || cs[0] != rs[0] || cs[3] != rs[2] {
		return 0, fmt.Errorf("responses must be [B,T,d] and contexts [B,C,T,d], got %v and %v", rs, cs)
	}
	if s := x.respMask.MustSize(); len(s) != 2 || s[0] != rs[0] || s[1] != rs[1] {
		return 0, fmt.Errorf("response mask is %v, want [%d %d]", s, rs[0], rs[1])
	}
	if s := x.ctxMask.MustSize(); len(s) != 3 || s[0] != cs[0] || s[1] != cs[1] || s[2] != cs[2] {
		return 0, fmt.Errorf("context mask is %v, want %v", s, cs[:3])
	}
	if s := x.cand.MustSize(); len(s) != 2 || s[0] != rs[0] || s[1] != rs[0] || x.cand.DType() != gotch.Bool {
		return 0, fmt.Errorf("candidates must be bool [%d %d], got %v %v", rs[0], rs[0], x.cand.DType(), s)
	}
	return rs[0], nil
}
