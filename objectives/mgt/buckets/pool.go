package buckets

import (
	"fmt"
	"math"
)

// Pool holds the responses' embeddings as unit rows of one flat float32 slice, so that a dot product is a
// cosine (Eq. 11).
type Pool struct {
	N, Dim int
	Vecs   []float32 // row i is Vecs[i*Dim : (i+1)*Dim]
}

// NewPool normalises rows (n×dim, flat) to unit length in place and wraps them. A zero row stays zero.
func NewPool(vecs []float32, dim int) (*Pool, error) {
	if dim <= 0 || len(vecs)%dim != 0 {
		return nil, fmt.Errorf("buckets: pool of %d values is not a whole number of rows of %d", len(vecs), dim)
	}
	n := len(vecs) / dim
	for i := 0; i < n; i++ {
		row := vecs[i*dim : (i+1)*dim]
		s := 0.0
		for _, v := range row {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("buckets: pool row %d holds %v", i, v)
			}
			s += float64(v) * float64(v)
		}
		if s == 0 {
			continue
		}
		inv := float32(1 / math.Sqrt(s))
		for j := range row {
			row[j] *= inv
		}
	}
	return &Pool{N: n, Dim: dim, Vecs: vecs}, nil
}

// Centred is a copy of p with the mean of its rows subtracted from each and the rows normalised again: cosines
// measured from the pool's centre instead of the origin. An encoder whose embeddings share one dominant direction
// (anisotropy) puts every raw cosine near 1; centring takes that shared part out ("all-but-the-top", Mu &
// Viswanath 2018, removes the mean first for this reason), so a fixed threshold can tell paraphrases from the rest.
func Centred(p *Pool) *Pool {
	mean := make([]float64, p.Dim)
	for i := 0; i < p.N; i++ {
		for j, v := range p.Row(i) {
			mean[j] += float64(v)
		}
	}
	for j := range mean {
		mean[j] /= float64(max(p.N, 1))
	}
	vecs := make([]float32, len(p.Vecs))
	for i := 0; i < p.N; i++ {
		row, src := vecs[i*p.Dim:(i+1)*p.Dim], p.Row(i)
		for j := range row {
			row[j] = float32(float64(src[j]) - mean[j])
		}
	}
	c, _ := NewPool(vecs, p.Dim) // p's rows are finite, so theirs are
	return c
}

// Row is response i's unit embedding.
func (p *Pool) Row(i int) []float32 { return p.Vecs[i*p.Dim : (i+1)*p.Dim] }

// Cosine is d(R_i, R_j) of Eq. 11.
func (p *Pool) Cosine(i, j int) float32 { return dot(p.Row(i), p.Row(j)) }

// dot is the inner product, four lanes at a time.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
