package tsne

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestConditionalHitsPerplexity(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	cases := []struct {
		name       string
		k          int
		perplexity float64
		scale      float64 // squared distances are drawn on this scale
	}{
		{"unit distances", 90, 30, 1},
		{"large distances (768-D raw)", 90, 30, 5e4},
		{"tiny distances", 90, 30, 1e-6},
		{"low perplexity", 15, 5, 3},
		{"perplexity near k", 12, 11, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dist := make([]float64, c.k)
			for m := range dist {
				dist[m] = c.scale * (1 + rng.ExpFloat64())
			}
			slices.Sort(dist)
			out := make([]float64, c.k)
			if !conditional(dist, c.perplexity, out) {
				t.Fatal("bisection failed")
			}
			sum, h := 0.0, 0.0
			for _, p := range out {
				sum += p
				if p > 0 {
					h -= p * math.Log(p)
				}
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("probabilities sum to %v", sum)
			}
			if got := math.Exp(h); math.Abs(got-c.perplexity)/c.perplexity > 1e-3 {
				t.Errorf("perplexity %v, want %v", got, c.perplexity)
			}
			for m := 1; m < c.k; m++ {
				if out[m] > out[m-1]+1e-15 {
					t.Fatalf("nearer neighbour %d has less probability than %d", m-1, m)
				}
			}
		})
	}
}

func TestAffinitiesSymmetricAndNormalised(t *testing.T) {
	x, _ := clusters(4, 30, 6, 3, 4)
	data, n, d, err := flatten(x)
	if err != nil {
		t.Fatal(err)
	}
	p, err := affinities(nearest(data, n, d, 15), 5)
	if err != nil {
		t.Fatal(err)
	}
	at := func(i, j int32) float64 {
		cols := p.col[p.start[i]:p.start[i+1]]
		if m, ok := slices.BinarySearch(cols, j); ok {
			return p.val[p.start[i]+m]
		}
		return 0
	}
	sum := 0.0
	for i := int32(0); int(i) < n; i++ {
		cols := p.col[p.start[i]:p.start[i+1]]
		if len(cols) < 15 {
			t.Errorf("row %d has %d entries, fewer than its 15 neighbours", i, len(cols))
		}
		if !slices.IsSorted(cols) || slices.Contains(cols, i) {
			t.Errorf("row %d columns %v: not ascending or holding the diagonal", i, cols)
		}
		for e, j := range cols {
			v := p.val[p.start[i]+e]
			sum += v
			if v <= 0 || at(j, i) != v {
				t.Errorf("P[%d,%d] = %v but P[%d,%d] = %v", i, j, v, j, i, at(j, i))
			}
		}
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("P sums to %v, want 1", sum)
	}
}

func TestNearestMatchesSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const n, d, k = 120, 4, 10
	data := make([]float64, n*d)
	for i := range data {
		data[i] = float64(rng.IntN(3)) // few distinct values: many ties and duplicates
	}
	nb := nearest(data, n, d, k)
	for i := 0; i < n; i++ {
		type cand struct {
			j int32
			s float64
		}
		var all []cand
		for j := 0; j < n; j++ {
			if j == i {
				continue
			}
			s := 0.0
			for c := 0; c < d; c++ {
				t := data[i*d+c] - data[j*d+c]
				s += t * t
			}
			all = append(all, cand{int32(j), s})
		}
		slices.SortStableFunc(all, func(a, b cand) int { return cmpFloat(a.s, b.s) })
		for m := 0; m < k; m++ {
			if nb.idx[i*k+m] != all[m].j || nb.dist[i*k+m] != all[m].s {
				t.Fatalf("point %d neighbour %d: got %d at %v, want %d at %v",
					i, m, nb.idx[i*k+m], nb.dist[i*k+m], all[m].j, all[m].s)
			}
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
