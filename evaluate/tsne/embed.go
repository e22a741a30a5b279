package tsne

import (
	"fmt"
	"math"
)

// Embed maps the rows of x (one embedding each, all of one length) to points in the plane, in row order.
func Embed(x [][]float32, opt Options) ([][2]float64, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	data, n, d, err := flatten(x)
	if err != nil {
		return nil, err
	}
	k := opt.neighbours()
	if k < 1 {
		return nil, fmt.Errorf("tsne: perplexity %v keeps no neighbour (3·perplexity < 1)", opt.Perplexity)
	}
	if n-1 < k {
		return nil, fmt.Errorf("tsne: perplexity %v too large for %d points (needs at least %d = 3·perplexity+1)",
			opt.Perplexity, n, k+1)
	}
	if opt.PCADims > 0 && opt.PCADims < d {
		if data, err = pca(data, n, d, opt.PCADims); err != nil {
			return nil, fmt.Errorf("tsne: %w", err)
		}
		d = opt.PCADims
	}
	nb := nearest(data, n, d, k)
	p, err := affinities(nb, opt.Perplexity)
	if err != nil {
		return nil, fmt.Errorf("tsne: %w", err)
	}
	y, err := optimize(p, opt)
	if err != nil {
		return nil, fmt.Errorf("tsne: %w", err)
	}
	out := make([][2]float64, n)
	for i := range out {
		out[i] = [2]float64{y[2*i], y[2*i+1]}
	}
	return out, nil
}

// flatten copies x into one row-major float64 slice, checking that it is a non-empty, rectangular matrix
// of finite numbers.
func flatten(x [][]float32) (data []float64, n, d int, err error) {
	if len(x) == 0 {
		return nil, 0, 0, fmt.Errorf("tsne: no rows to embed")
	}
	n, d = len(x), len(x[0])
	if d == 0 {
		return nil, 0, 0, fmt.Errorf("tsne: row 0 has no values")
	}
	data = make([]float64, n*d)
	for i, row := range x {
		if len(row) != d {
			return nil, 0, 0, fmt.Errorf("tsne: row %d has %d values, row 0 has %d", i, len(row), d)
		}
		for j, v := range row {
			f := float64(v)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, 0, 0, fmt.Errorf("tsne: row %d value %d is %v", i, j, v)
			}
			data[i*d+j] = f
		}
	}
	return data, n, d, nil
}
