package simcse

import (
	"fmt"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/objectives/dse"
	"convrep/objectives/tensors"
)

// Loss is unsupervised SimCSE's training objective (Gao et al. 2021, §3 Eq. 4 with the in-batch
// negatives of Eq. 1): h1 and h2 [N,d] are two encodings of the same N sentences under different dropout
// masks, and
//
//	ℓ_i = −log( e^{sim(h_i, h_i⁺)/τ} / Σ_{j=1..N} e^{sim(h_i, h_j⁺)/τ} ),   sim = cosine,
//
// averaged over i. Only h1 is the anchor (the paper's, and its code's, one-directional loss). The cosines
// and the cross-entropy are computed in fp32 under mixed precision (tensors.FP32). The result keeps its
// graph.
func Loss(h1, h2 *ts.Tensor, tau float64) (*ts.Tensor, error) {
	if err := dse.CheckContrast(tau, dse.Orig); err != nil {
		return nil, fmt.Errorf("simcse loss: %w", err)
	}
	if _, err := dse.PairCount(h1, h2, nil); err != nil {
		return nil, fmt.Errorf("simcse loss: %w", err)
	}
	var loss *ts.Tensor
	err := tensors.FP32("simcse loss", func(keep torch.Keep) error {
		z1, z2 := tensors.Unit(tensors.Upcast(torch.Of(h1))), tensors.Unit(tensors.Upcast(torch.Of(h2)))
		logits := z1.Mm(z2.T()).DivScalar(tau) // [N,N] cosines / τ
		loss = keep(tensors.CrossEntropyDiagonal(logits))
		return nil
	})
	return loss, err
}
