package dse

import (
	"fmt"
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/settings"
	"convrep/internal/torch"
	"convrep/objectives/tensors"
)

// Mode is how HardConLoss weighs the in-batch negatives.
type Mode string

const (
	// HardNeg weighs each negative by its relative similarity α_ij (DSE §3.2, Eq. 1-2, after Zhang et al.
	// 2021a); DSE's default.
	HardNeg Mode = "hardneg"
	// Orig is plain InfoNCE: every negative counts once.
	Orig Mode = "orig"
)

// ParseMode reads a mode name case-insensitively ("HardNeg" and "Orig" as the DSE code spells them).
func ParseMode(s string) (Mode, error) {
	return settings.OneOf("contrastive mode", s, HardNeg, Orig)
}

// HardConLoss is DSE's symmetric contrastive loss over B pairs of L2-normalised features f1, f2 [B,D]
// (the contrast-head outputs of x_i and x_i+), with temperature tau. It reproduces HardConLoss of the
// DSE authors' code, which is what the paper's Eq. 1-3 are computed with:
//
//   - the logits are s(e_a, e_b)/τ over all 2B views [f1; f2] (dot products: cosines for unit rows);
//   - anchor a's positive is its partner; its negatives are the other 2B−2 views;
//   - per anchor ℓ = −log(exp(s⁺/τ) / (exp(s⁺/τ) + Ng)), with Ng = Σ_neg exp(s/τ) for Orig and, for
//     HardNeg, Ng = Σ_neg α·exp(s/τ) where α = exp(s/τ) / mean_neg exp(s/τ) (Eq. 2). The code keeps the
//     positive in the denominator with weight 1 and does not detach α, so gradients flow through it;
//   - the loss is the mean of ℓ over the anchors whose pair has pairsimi 1, each pair counted from both
//     sides (Eq. 3). pairsimi is an int64 [B] vector or nil (all pairs positive). A batch without a
//     positive pair gives 0 (the reference divides 0 by 0).
//
// The loss is computed in fp32 under mixed precision (tensors.FP32). The result is a scalar that keeps
// its graph; the caller drops it.
func HardConLoss(f1, f2, pairsimi *ts.Tensor, tau float64, mode Mode) (*ts.Tensor, error) {
	if err := CheckContrast(tau, mode); err != nil {
		return nil, fmt.Errorf("hard contrastive loss: %w", err)
	}
	b, err := PairCount(f1, f2, pairsimi)
	if err != nil {
		return nil, fmt.Errorf("hard contrastive loss: %w", err)
	}
	var loss *ts.Tensor
	err = tensors.FP32("hard contrastive loss", func(keep torch.Keep) error {
		z := torch.Cat(0, tensors.Upcast(torch.Of(f1)), tensors.Upcast(torch.Of(f2)))
		l, _ := contrast(z, b, torch.Of(pairsimi), tau, mode)
		loss = keep(l)
		return nil
	})
	return loss, err
}

func CheckContrast(tau float64, mode Mode) error {
	if !(tau > 0) || math.IsInf(tau, 0) {
		return fmt.Errorf("temperature %v must be a positive number", tau)
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return err
	}
	return nil
}

// PairCount checks that f1 and f2 are [B,D] float features with B ≥ 2 (an anchor needs a negative) and
// that pairsimi, when given, is [B]; it returns B.
func PairCount(f1, f2, pairsimi *ts.Tensor) (int64, error) {
	if f1 == nil || f2 == nil {
		return 0, fmt.Errorf("both feature tensors are required")
	}
	s1, err1 := f1.Size()
	s2, err2 := f2.Size()
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("feature sizes: %v, %v", err1, err2)
	}
	if len(s1) != 2 || len(s2) != 2 || s1[0] != s2[0] || s1[1] != s2[1] {
		return 0, fmt.Errorf("features must both be [batch, dim], got %v and %v", s1, s2)
	}
	if s1[0] < 2 {
		return 0, fmt.Errorf("a batch of %d pairs has no negatives (need at least 2)", s1[0])
	}
	if d1, d2 := f1.DType(), f2.DType(); d1 != d2 || (d1 != gotch.Float && d1 != gotch.Double && d1 != gotch.Half && d1 != gotch.BFloat16) {
		return 0, fmt.Errorf("features must share one floating dtype, got %v and %v", d1, d2)
	}
	if pairsimi != nil {
		if s, err := pairsimi.Size(); err != nil || len(s) != 1 || s[0] != s1[0] {
			return 0, fmt.Errorf("pairsimi must be [%d], got %v (%v)", s1[0], s, err)
		}
	}
	return s1[0], nil
}

// contrast computes the loss of HardConLoss from the stacked unit features z = [f1; f2] [2B,D] and also
// returns the B positive logits s(e_i, e_i+)/τ. It works in log space, which is the same function as the
// reference's exp-then-log but cannot overflow for small τ. z must be fp32 or fp64 and autocast off (the
// callers run it in tensors.FP32): a bf16 logit of 20 is rounded by up to 0.06. pairsimi may be nil
// (torch.Of(nil)). Errors surface as panics (callers' scopes catch them).
func contrast(z torch.Tensor, b int64, pairsimi torch.Tensor, tau float64, mode Mode) (loss, pos torch.Tensor) {
	dtype := z.DType()
	logits := z.Mm(z.T()).DivScalar(tau) // [2B,2B]

	// s(e_i, e_i+)/τ sits at (i, i+B); the anchor i+B has the same positive (Eq. 3 counts both sides).
	pos = logits.Diagonal(b, 0, 1)
	pos2 := torch.Cat(0, pos, pos)

	// Anchor a's negatives are the 2B−2 views other than a and its partner: eye(B) tiled 2×2 marks those two.
	self := torch.Eye(b, gotch.Bool, z.Device()).Repeat(2, 2)
	neg := logits.MaskedFill(self, math.Inf(-1))

	// logNg = log Σ_neg exp(s/τ) for Orig. For HardNeg, Eq. 2 gives
	// Σ_j α_ij exp(s_ij/τ) = Σ exp(2s/τ) / ((1/(2B−2)) Σ exp(s/τ)), i.e. in logs
	// logNg = log(2B−2) + LSE(2s/τ) − LSE(s/τ).
	logNg := neg.Logsumexp(1)
	if mode == HardNeg {
		logNg = neg.MulScalar(2).Logsumexp(1).Sub(logNg).AddScalar(math.Log(float64(2*b - 2)))
	}

	// Eq. 1 per anchor: −log(e^{s⁺/τ} / (e^{s⁺/τ} + Ng)) = log(1 + Ng·e^{−s⁺/τ}) = softplus(logNg − s⁺/τ).
	perAnchor := logNg.Sub(pos2).Softplus()

	// Eq. 3: the mean over anchors, here over those whose pair is marked positive.
	if pairsimi.Nil() {
		return perAnchor.Mean(dtype), pos
	}
	w := pairsimi.Eq(1).Cast(dtype)
	w2 := torch.Cat(0, w, w)
	return perAnchor.Mul(w2).Sum(dtype).Div(w2.Sum(dtype).ClampMin(1)), pos
}
