package tsne

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// pca projects the n×d row-major data onto its first k principal components (those of largest variance),
// returning an n×k row-major slice. Each component's sign is fixed so that its largest-magnitude loading is
// positive, so the projection does not depend on the eigensolver's choice of sign.
func pca(data []float64, n, d, k int) (out []float64, err error) {
	// gonum reports shape and factorisation failures by panicking.
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("pca of %d×%d to %d dims: %v", n, d, k, r)
		}
	}()
	centred := make([]float64, len(data))
	mean := make([]float64, d)
	for i := 0; i < n; i++ {
		for j, v := range data[i*d : (i+1)*d] {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	for i := 0; i < n; i++ {
		for j, v := range data[i*d : (i+1)*d] {
			centred[i*d+j] = v - mean[j]
		}
	}
	xc := mat.NewDense(n, d, centred)
	var cov mat.SymDense
	cov.SymOuterK(1/float64(n), xc.T())
	var eig mat.EigenSym
	if !eig.Factorize(&cov, true) {
		return nil, fmt.Errorf("pca of %d×%d: eigendecomposition of the covariance failed", n, d)
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	// Eigenvalues come in ascending order: the last k columns are the leading components, largest first.
	w := mat.NewDense(d, k, nil)
	for c := 0; c < k; c++ {
		src := d - 1 - c
		big, sign := 0.0, 1.0
		for r := 0; r < d; r++ {
			if v := vecs.At(r, src); v*v > big {
				big = v * v
				sign = 1
				if v < 0 {
					sign = -1
				}
			}
		}
		for r := 0; r < d; r++ {
			w.Set(r, c, sign*vecs.At(r, src))
		}
	}
	proj := mat.NewDense(n, k, nil)
	proj.Mul(xc, w)
	return proj.RawMatrix().Data, nil
}
