package tsne

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// sparseP is the symmetric joint affinity matrix P in compressed rows: row i's entries are
// col[start[i]:start[i+1]] with values val[...], columns ascending. Its entries sum to 1.
type sparseP struct {
	n     int
	start []int
	col   []int32
	val   []float64
}

// Bisection settings for each point's Gaussian precision (van der Maaten & Hinton 2008, §2).
const (
	entropyTol     = 1e-5
	bisectionSteps = 200
)

// affinities turns nearest-neighbour distances into P: each point's conditional p(j|i) over its
// neighbours has the requested perplexity, and P_ij = (p(j|i) + p(i|j)) / 2n.
func affinities(nb knn, perplexity float64) (sparseP, error) {
	n, k := nb.n, nb.k
	cond := make([]float64, n*k)
	failed := make([]bool, n)
	parallelFor(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			failed[i] = !conditional(nb.dist[i*k:(i+1)*k], perplexity, cond[i*k:(i+1)*k])
		}
	})
	if i := slices.Index(failed, true); i >= 0 {
		return sparseP{}, fmt.Errorf("affinities: point %d: no Gaussian precision gives perplexity %v", i, perplexity)
	}
	type entry struct {
		i, j int32
		v    float64
	}
	entries := make([]entry, 0, 2*n*k)
	scale := 1 / (2 * float64(n))
	for i := 0; i < n; i++ {
		for m := 0; m < k; m++ {
			j, v := nb.idx[i*k+m], cond[i*k+m]*scale
			entries = append(entries, entry{int32(i), j, v}, entry{j, int32(i), v})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if c := cmp.Compare(a.i, b.i); c != 0 {
			return c
		}
		if c := cmp.Compare(a.j, b.j); c != 0 {
			return c
		}
		return cmp.Compare(a.v, b.v) // equal (i, j) pairs are summed; a fixed order keeps the sum exact
	})
	p := sparseP{n: n, start: make([]int, n+1)}
	for e := 0; e < len(entries); {
		i, j, v := entries[e].i, entries[e].j, entries[e].v
		for e++; e < len(entries) && entries[e].i == i && entries[e].j == j; e++ {
			v += entries[e].v
		}
		p.col = append(p.col, j)
		p.val = append(p.val, v)
		p.start[i+1] = len(p.col)
	}
	for i := 1; i <= n; i++ {
		p.start[i] = max(p.start[i], p.start[i-1]) // rows with no entry (impossible with k ≥ 1, but safe)
	}
	return p, nil
}

// conditional fills out with p(j|i) ∝ exp(-beta·dist_j) over one point's neighbours, with beta found by
// bisection so that the distribution's entropy is log(perplexity). dist holds squared distances. It
// reports false if the bisection ends with a non-finite distribution.
func conditional(dist []float64, perplexity float64, out []float64) bool {
	target := math.Log(perplexity)
	// Shifting by the nearest distance changes no probability and keeps exp from underflowing.
	d0 := slices.Min(dist)
	beta, lo, hi := 1.0, 0.0, math.Inf(1)
	for step := 0; step < bisectionSteps; step++ {
		sum, wsum := 0.0, 0.0
		for m, d := range dist {
			e := math.Exp(-beta * (d - d0))
			out[m] = e
			sum += e
			wsum += e * (d - d0)
		}
		h := math.Log(sum) + beta*wsum/sum // entropy of the normalised distribution
		for m := range out {
			out[m] /= sum
		}
		diff := h - target
		if math.Abs(diff) < entropyTol {
			break
		}
		if diff > 0 { // too flat: sharpen
			lo = beta
			if math.IsInf(hi, 1) {
				beta *= 2
			} else {
				beta = (beta + hi) / 2
			}
		} else {
			hi = beta
			beta = (beta + lo) / 2
		}
	}
	for _, v := range out {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
