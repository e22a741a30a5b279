package tsne

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPCAKeepsALowRankSubspace puts points in a 3-D subspace of 20-D: the first 3 components must keep
// every pairwise distance, and their variances must come largest first.
func TestPCAKeepsALowRankSubspace(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	const n, d, r = 80, 20, 3
	basis := make([]float64, r*d)
	for i := range basis {
		basis[i] = rng.NormFloat64()
	}
	data := make([]float64, n*d)
	for i := 0; i < n; i++ {
		for a, s := range []float64{5, 2, 0.5} { // distinct spreads along the latent axes
			z := rng.NormFloat64() * s
			for c := 0; c < d; c++ {
				data[i*d+c] += z * basis[a*d+c]
			}
		}
		for c := 0; c < d; c++ {
			data[i*d+c] += 7 // an offset that PCA must remove
		}
	}
	proj, err := pca(data, n, d, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(proj) != n*r {
		t.Fatalf("projection has %d values, want %d", len(proj), n*r)
	}
	dist := func(x []float64, w, i, j int) float64 {
		s := 0.0
		for c := 0; c < w; c++ {
			t := x[i*w+c] - x[j*w+c]
			s += t * t
		}
		return math.Sqrt(s)
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if a, b := dist(data, d, i, j), dist(proj, r, i, j); math.Abs(a-b) > 1e-9*(1+a) {
				t.Fatalf("distance %d-%d: %v in the data, %v after PCA", i, j, a, b)
			}
		}
	}
	variance := make([]float64, r)
	for i := 0; i < n; i++ {
		for c := 0; c < r; c++ {
			variance[c] += proj[i*r+c] * proj[i*r+c]
		}
	}
	if !(variance[0] > variance[1] && variance[1] > variance[2]) {
		t.Errorf("component variances %v not in decreasing order", variance)
	}
	// A second run gives the same projection bit for bit.
	again, err := pca(data, n, d, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := range proj {
		if proj[i] != again[i] {
			t.Fatalf("second PCA differs at %d: %v vs %v", i, proj[i], again[i])
		}
	}
}
