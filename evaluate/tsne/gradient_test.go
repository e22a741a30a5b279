package tsne

import (
	"math"
	"math/rand/v2"
	"testing"
)

// kl is KL(P‖Q) for the sparse P and the map y, with Q computed exactly.
func kl(p sparseP, y []float64) float64 {
	n := p.n
	z := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				dx, dy := y[2*i]-y[2*j], y[2*i+1]-y[2*j+1]
				z += 1 / (1 + dx*dx + dy*dy)
			}
		}
	}
	c := 0.0
	for i := 0; i < n; i++ {
		for e := p.start[i]; e < p.start[i+1]; e++ {
			j := p.col[e]
			dx, dy := y[2*i]-y[2*j], y[2*i+1]-y[2*j+1]
			q := 1 / (1 + dx*dx + dy*dy) / z
			c += p.val[e] * math.Log(p.val[e]/q)
		}
	}
	return c
}

// TestGradientIsTheCostsDerivative checks compute against central differences of KL(P‖Q): with every
// quadtree cell opened (tiny theta) the two agree up to the gradient's omitted factor 4, and with
// theta 0.5 they stay close.
func TestGradientIsTheCostsDerivative(t *testing.T) {
	x, _ := clusters(4, 25, 10, 4, 8)
	data, n, d, err := flatten(x)
	if err != nil {
		t.Fatal(err)
	}
	p, err := affinities(nearest(data, n, d, 30), 10)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	y := make([]float64, 2*n)
	for i := range y {
		y[i] = rng.NormFloat64() * 3
	}
	numeric := make([]float64, 2*n)
	const h = 1e-5
	for c := range y {
		old := y[c]
		y[c] = old + h
		up := kl(p, y)
		y[c] = old - h
		down := kl(p, y)
		y[c] = old
		numeric[c] = (up - down) / (2 * h) / 4
	}
	for _, tc := range []struct {
		theta, tol float64
	}{{1e-6, 1e-6}, {0.5, 0.02}} {
		grad := make([]float64, 2*n)
		newGradient(n).compute(p, y, 1, tc.theta, grad)
		var diff, norm float64
		for c := range grad {
			diff += (grad[c] - numeric[c]) * (grad[c] - numeric[c])
			norm += numeric[c] * numeric[c]
		}
		if r := math.Sqrt(diff / norm); r > tc.tol {
			t.Errorf("theta %g: gradient differs from the cost's derivative by %.2e (relative), want ≤ %.0e",
				tc.theta, r, tc.tol)
		}
	}
	// Exaggeration scales the attractive part only.
	g1, g12 := make([]float64, 2*n), make([]float64, 2*n)
	newGradient(n).compute(p, y, 1, 1e-6, g1)
	newGradient(n).compute(p, y, 12, 1e-6, g12)
	rep := make([]float64, 2*n)
	newGradient(n).compute(sparseP{n: n, start: make([]int, n+1)}, y, 1, 1e-6, rep) // P = 0: repulsion alone
	for c := range g1 {
		want := 12*(g1[c]-rep[c]) + rep[c]
		if math.Abs(g12[c]-want) > 1e-9*(1+math.Abs(want)) {
			t.Fatalf("coordinate %d: exaggerated gradient %v, want %v", c, g12[c], want)
		}
	}
}
