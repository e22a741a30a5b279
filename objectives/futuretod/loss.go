package futuretod

import (
	"fmt"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/settings"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives/tensors"
)

// Distance is how FutureTOD's Eq. 1-2 measure the gap between the student's and the teacher's [CLS]
// representations of one layer.
type Distance string

const (
	// SquaredL2 is ‖h_S − h_T‖², the paper's Eq. 1 and 2 (the default). It is smooth where h_S = h_T, which
	// the plain norm is not (its gradient is undefined there, and right after a refresh the two can agree).
	SquaredL2 Distance = "squared_l2"
	// MSE is ‖h_S − h_T‖² / d, the mean over the d hidden units (torch's MSELoss), one of "the other
	// distillation objectives" of §2.2 that the authors found to make no significant difference.
	MSE Distance = "mse"
)

// ParseDistance reads a distance name case-insensitively.
func ParseDistance(s string) (Distance, error) {
	return settings.OneOf("distance", s, SquaredL2, MSE)
}

// DistillLoss is FutureTOD's Eq. 2: the sum over the distilled layers l of the distance between the
// student's [CLS] state h_S^l and the teacher's h_T^l, averaged over the B examples of the batch:
//
//	L_dis = (1/B) Σ_b Σ_l dist(h_S^l[b], h_T^l[b])
//
// student and teacher hold one [B,H] tensor per layer, in the same order. The teacher's side is a fixed
// target: it is detached here, so no gradient reaches it whatever graph it came with. Under mixed
// precision the states may come from autocast in bf16; the distances and means are computed in fp32
// (tensors.FP32). The result is a scalar that keeps the student's graph; the caller drops it.
func DistillLoss(student, teacher []*ts.Tensor, d Distance) (*ts.Tensor, error) {
	if _, err := ParseDistance(string(d)); err != nil {
		return nil, fmt.Errorf("distillation loss: %w", err)
	}
	if len(student) == 0 || len(student) != len(teacher) {
		return nil, fmt.Errorf("distillation loss: %d student layers and %d teacher layers (want the same, at least one)", len(student), len(teacher))
	}
	var hidden int64
	for l := range student {
		if student[l] == nil || teacher[l] == nil {
			return nil, fmt.Errorf("distillation loss: layer %d: missing representation", l)
		}
		s, _ := student[l].Size()
		t, _ := teacher[l].Size()
		if len(s) != 2 || len(t) != 2 || s[0] != t[0] || s[1] != t[1] || s[0] == 0 {
			return nil, fmt.Errorf("distillation loss: layer %d: student %v and teacher %v must both be [batch, hidden]", l, s, t)
		}
		if dt := student[l].DType(); dt != teacher[l].DType() || !isFloat(dt) {
			return nil, fmt.Errorf("distillation loss: layer %d: dtypes %v and %v (want one float dtype)", l, dt, teacher[l].DType())
		}
		hidden = s[1]
	}
	var loss *ts.Tensor
	err := tensors.FP32("distillation loss", func(keep torch.Keep) error {
		dtype := tensors.LossDType(torch.Of(student[0]))
		var sum torch.Tensor
		for l := range student {
			hS, hT := torch.Of(student[l]).Cast(dtype), torch.Of(teacher[l]).Detach().Cast(dtype)
			// Σ over the hidden units of the squared difference, then the mean over the batch.
			perLayer := hS.Sub(hT).Square().SumDim(1, false, dtype).Mean(dtype)
			if sum.Nil() {
				sum = perLayer
			} else {
				sum = sum.Add(perLayer)
			}
		}
		if d == MSE {
			sum = sum.DivScalar(float64(hidden))
		}
		loss = keep(sum)
		return nil
	})
	return loss, err
}

// topCLS returns the [CLS] states [B,H] of the top k encoder layers of out, lowest of them first (Eq. 2's
// l runs over them; Table 5's "top-K layers"). Hidden[0] is the embedding output and is never one of them.
// It runs in its caller's scope and panics on a libtorch error.
func topCLS(out *models.Output, k int) ([]*ts.Tensor, error) {
	layers := len(out.Hidden) - 1
	if k < 1 || k > layers {
		return nil, fmt.Errorf("top %d layers of an encoder with %d", k, layers)
	}
	cls := make([]*ts.Tensor, 0, k)
	for _, h := range out.Hidden[layers-k+1:] {
		cls = append(cls, torch.Of(h).Select(1, 0).Raw())
	}
	return cls, nil
}

// isFloat reports whether dt is a floating dtype a distillation loss can read.
func isFloat(dt gotch.DType) bool {
	return dt == gotch.Float || dt == gotch.Double || dt == gotch.BFloat16 || dt == gotch.Half
}
