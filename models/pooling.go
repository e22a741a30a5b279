package models

import (
	"fmt"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// Pooling turns token states [B,T,H] into one vector per input [B,H].
type Pooling string

const (
	// Mean averages the states of real tokens: Σ_t h_t·m_t / Σ_t m_t (DSE §3, the embedding it trains).
	Mean Pooling = "mean"
	// CLS takes the state of the first token.
	CLS Pooling = "cls"
)

// ParsePooling checks a pooling name from a flag or config.
func ParsePooling(s string) (Pooling, error) {
	switch p := Pooling(s); p {
	case Mean, CLS:
		return p, nil
	}
	return "", fmt.Errorf("pooling %q is not one of mean, cls", s)
}

// Pool applies p to hidden [B,T,H] with the 1/0 attention mask [B,T].
func Pool(p Pooling, hidden, mask *ts.Tensor) (*ts.Tensor, error) {
	var out *ts.Tensor
	err := torch.Catch(string(p)+" pooling", func() error {
		switch p {
		case Mean:
			out = meanPool(hidden, mask)
		case CLS:
			out = hidden.MustSelect(1, 0, false)
		default:
			return fmt.Errorf("unknown pooling %q", p)
		}
		return nil
	})
	return out, err
}

func meanPool(hidden, mask *ts.Tensor) *ts.Tensor {
	m := mask.MustTotype(hidden.DType(), false).MustUnsqueeze(-1, true) // [B,T,1]
	sum := hidden.MustMul(m, false).MustSumDimIntlist([]int64{1}, false, hidden.DType(), true)
	count := m.MustSumDimIntlist([]int64{1}, false, hidden.DType(), true).MustClampMin(ts.FloatScalar(1e-9), true)
	out := sum.MustDiv(count, true)
	count.MustDrop()
	return out
}
