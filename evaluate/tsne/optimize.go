package tsne

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Optimiser settings of van der Maaten (2014) and bhtsne.
const (
	exaggeration     = 12
	exaggerationMax  = 250 // iterations of early exaggeration at most
	momentumEarly    = 0.5
	momentumLate     = 0.8
	gainStep         = 0.2
	gainDecay        = 0.8
	minGain          = 0.01
	initialStdDev    = 1e-4
	minLearningRate  = 200
	learningRateDivN = 12 // Belkina et al. (2019): step n/12 for large n
)

// optimize runs gradient descent on KL(P‖Q) from a seeded random map and returns it (point i at 2i, 2i+1).
func optimize(p sparseP, opt Options) ([]float64, error) {
	n := p.n
	rng := rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15))
	y := make([]float64, 2*n)
	for i := range y {
		y[i] = rng.NormFloat64() * initialStdDev
	}
	eta := max(minLearningRate, float64(n)/learningRateDivN)
	exagIters := min(exaggerationMax, opt.Iterations/4)
	grad := make([]float64, 2*n)
	update := make([]float64, 2*n)
	gains := make([]float64, 2*n)
	for i := range gains {
		gains[i] = 1
	}
	g := newGradient(n)
	for it := 0; it < opt.Iterations; it++ {
		exag, momentum := 1.0, momentumLate
		if it < exagIters {
			exag, momentum = exaggeration, momentumEarly
		}
		g.compute(p, y, exag, opt.Theta, grad)
		for c := range y {
			// Grow a coordinate's gain while its gradient keeps pointing against the last step.
			if (grad[c] > 0) != (update[c] > 0) {
				gains[c] += gainStep
			} else {
				gains[c] = max(gains[c]*gainDecay, minGain)
			}
			update[c] = momentum*update[c] - eta*gains[c]*grad[c]
			y[c] += update[c]
		}
		centre(y)
		if opt.Progress != nil {
			opt.Progress(it+1, opt.Iterations)
		}
	}
	for c, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("optimize: point %d diverged to %v", c/2, v)
		}
	}
	return y, nil
}

// centre moves the map's mean to the origin; t-SNE's cost ignores translation, so this only keeps the
// coordinates from drifting.
func centre(y []float64) {
	n := float64(len(y) / 2)
	var sx, sy float64
	for i := 0; i < len(y); i += 2 {
		sx += y[i]
		sy += y[i+1]
	}
	sx, sy = sx/n, sy/n
	for i := 0; i < len(y); i += 2 {
		y[i] -= sx
		y[i+1] -= sy
	}
}
