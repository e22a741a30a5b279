// Package ensemble is the arithmetic of MGT's ensemble (Mehri and Eskenazi, §3.2, Eq. 7): each member's
// softmax over a context's candidates, averaged over the members. objectives/mgt applies it to tensors of
// scores, and to the scores of embeddings that evaluation makes once per text (objectives.Evaluation's
// Ensemble, which evaluate.ResponseEnsemble asks for).
package ensemble

import (
	"fmt"
	"math"
)

// Softmax returns exp(a_i) / Σ_j exp(a_j), computed with the maximum subtracted.
func Softmax(a []float64) []float64 {
	hi := math.Inf(-1)
	for _, v := range a {
		hi = math.Max(hi, v)
	}
	out := make([]float64, len(a))
	sum := 0.0
	for i, v := range a {
		out[i] = math.Exp(v - hi)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// Average averages per-member probabilities [L][B][k] into [B][k] (Eq. 7's 1/L Σ_l). Every member must
// score the same contexts with the same number of candidates each.
func Average(per [][][]float64) ([][]float64, error) {
	if len(per) == 0 {
		return nil, fmt.Errorf("ensemble: no members")
	}
	out := make([][]float64, len(per[0]))
	for i := range out {
		out[i] = make([]float64, len(per[0][i]))
	}
	for l, p := range per {
		if len(p) != len(out) {
			return nil, fmt.Errorf("ensemble member %d scored %d contexts, member 1 %d", l+1, len(p), len(out))
		}
		for i, row := range p {
			if len(row) != len(out[i]) {
				return nil, fmt.Errorf("ensemble member %d gave context %d %d candidates, member 1 %d", l+1, i, len(row), len(out[i]))
			}
			for j, v := range row {
				out[i][j] += v / float64(len(per))
			}
		}
	}
	return out, nil
}
