package tsne

// gradient computes the Barnes-Hut t-SNE gradient, keeping its buffers between iterations.
type gradient struct {
	tree      quadTree
	rep, sumQ []float64 // per point: repulsive force (x, y) and its share of Z
}

func newGradient(n int) *gradient {
	return &gradient{rep: make([]float64, 2*n), sumQ: make([]float64, n)}
}

// compute writes into grad the gradient of KL(P‖Q) at map y, without its constant factor 4:
//
//	grad_i = exag·Σ_j P_ij q_ij (y_i − y_j) − (1/Z) Σ_j q_ij² (y_i − y_j),  q_ij = 1/(1+|y_i − y_j|²),  Z = Σ_{k≠l} q_kl
//
// the attractive part exactly over P's entries, the repulsive part and Z through the quadtree.
func (g *gradient) compute(p sparseP, y []float64, exag, theta float64, grad []float64) {
	n := p.n
	g.tree.build(y)
	parallelFor(n, func(lo, hi int) {
		var stack []int32
		for i := lo; i < hi; i++ {
			var fx, fy, s float64
			fx, fy, s, stack = g.tree.repulsion(i, theta, stack)
			g.rep[2*i], g.rep[2*i+1], g.sumQ[i] = fx, fy, s
			// Attraction.
			xi, yi := y[2*i], y[2*i+1]
			var ax, ay float64
			for e := p.start[i]; e < p.start[i+1]; e++ {
				j := p.col[e]
				dx, dy := xi-y[2*j], yi-y[2*j+1]
				w := p.val[e] / (1 + dx*dx + dy*dy)
				ax += w * dx
				ay += w * dy
			}
			grad[2*i], grad[2*i+1] = exag*ax, exag*ay
		}
	})
	z := 0.0
	for _, s := range g.sumQ {
		z += s
	}
	for c := range grad {
		grad[c] -= g.rep[c] / z
	}
}
