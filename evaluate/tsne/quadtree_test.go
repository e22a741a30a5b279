package tsne

import (
	"math"
	"math/rand/v2"
	"testing"
)

// exactRepulsion is the O(n) sum that quadTree.repulsion approximates.
func exactRepulsion(y []float64, i int) (fx, fy, sumQ float64) {
	for j := 0; j < len(y)/2; j++ {
		if j == i {
			continue
		}
		dx, dy := y[2*i]-y[2*j], y[2*i+1]-y[2*j+1]
		q := 1 / (1 + dx*dx + dy*dy)
		sumQ += q
		fx += q * q * dx
		fy += q * q * dy
	}
	return fx, fy, sumQ
}

// testMap is a 2-D map with clusters of different spreads, some exact duplicates and a far outlier.
func testMap(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 3))
	y := make([]float64, 0, 2*n)
	for len(y) < 2*n-8 {
		cx, cy := rng.NormFloat64()*30, rng.NormFloat64()*30
		s := math.Exp(rng.NormFloat64())
		for m := 0; m < 40 && len(y) < 2*n-8; m++ {
			y = append(y, cx+rng.NormFloat64()*s, cy+rng.NormFloat64()*s)
		}
	}
	y = append(y, y[0], y[1], y[0], y[1], y[2], y[3]) // duplicates of points 0 and 1
	return append(y, 1e4, -1e4)                       // an outlier
}

func TestRepulsionMatchesExactSum(t *testing.T) {
	y := testMap(1500, 1)
	var tree quadTree
	tree.build(y)
	if got := tree.nodes[0].count; int(got) != len(y)/2 {
		t.Fatalf("root holds %d points, want %d", got, len(y)/2)
	}
	// Single forces can nearly cancel, so the force error is taken over the whole map
	// (|F_bh − F| / |F| with all points' forces as one vector); Σq is positive, so it is checked per point.
	cases := []struct {
		theta        float64
		maxF, maxSum float64
	}{
		{1e-6, 1e-9, 1e-9}, // every cell opened: exact up to rounding
		{0.5, 0.01, 0.02},
		{1.0, 0.05, 0.08},
	}
	for _, c := range cases {
		var stack []int32
		var errF2, normF2, worstQ float64
		for i := 0; i < len(y)/2; i++ {
			var fx, fy, s float64
			fx, fy, s, stack = tree.repulsion(i, c.theta, stack)
			ex, ey, es := exactRepulsion(y, i)
			errF2 += (fx-ex)*(fx-ex) + (fy-ey)*(fy-ey)
			normF2 += ex*ex + ey*ey
			worstQ = max(worstQ, math.Abs(s-es)/es)
		}
		errF := math.Sqrt(errF2 / normF2)
		t.Logf("theta %g: relative force error %.2e, worst relative Σq error %.2e", c.theta, errF, worstQ)
		if errF > c.maxF || worstQ > c.maxSum {
			t.Errorf("theta %g: relative force error %.2e (want ≤ %.0e), worst relative Σq error %.2e (want ≤ %.0e)",
				c.theta, errF, c.maxF, worstQ, c.maxSum)
		}
	}
}

func TestQuadTreeCentresOfMass(t *testing.T) {
	y := testMap(600, 2)
	var tree quadTree
	tree.build(y)
	tree.build(y) // a rebuild reuses the nodes and must give the same tree
	var walk func(n int32, depth int) (count int32, sx, sy float64)
	walk = func(n int32, depth int) (int32, float64, float64) {
		nd := tree.nodes[n]
		if nd.child < 0 {
			if nd.count > 0 && (nd.point < 0 || y[2*nd.point] != nd.mx || y[2*nd.point+1] != nd.my) {
				t.Errorf("leaf %d: mean (%g, %g) is not its point's place", n, nd.mx, nd.my)
			}
			return nd.count, float64(nd.count) * nd.mx, float64(nd.count) * nd.my
		}
		var c int32
		var sx, sy float64
		for q := int32(0); q < 4; q++ {
			cc, x, y := walk(nd.child+q, depth+1)
			c, sx, sy = c+cc, sx+x, sy+y
		}
		if c != nd.count {
			t.Errorf("node %d counts %d, its children %d", n, nd.count, c)
		}
		if c > 0 && (math.Abs(sx/float64(c)-nd.mx) > 1e-6*(1+math.Abs(nd.mx)) || math.Abs(sy/float64(c)-nd.my) > 1e-6*(1+math.Abs(nd.my))) {
			t.Errorf("node %d: centre of mass (%g, %g), children's (%g, %g)", n, nd.mx, nd.my, sx/float64(c), sy/float64(c))
		}
		return c, sx, sy
	}
	if c, _, _ := walk(0, 0); int(c) != len(y)/2 {
		t.Errorf("tree holds %d points, want %d", c, len(y)/2)
	}
}
