package tsne

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// clusters draws perCluster points round each of k random centres in dim dimensions: centres with
// standard deviation spread per coordinate, points with standard deviation 1 round them.
func clusters(k, perCluster, dim int, spread float64, seed uint64) ([][]float32, []int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var x [][]float32
	var label []int
	for c := 0; c < k; c++ {
		centre := make([]float64, dim)
		for j := range centre {
			centre[j] = rng.NormFloat64() * spread
		}
		for p := 0; p < perCluster; p++ {
			row := make([]float32, dim)
			for j := range row {
				row[j] = float32(centre[j] + rng.NormFloat64())
			}
			x = append(x, row)
			label = append(label, c)
		}
	}
	return x, label
}

// nnAgreement is the fraction of points whose nearest other point in the map has the same label.
func nnAgreement(y [][2]float64, label []int) float64 {
	agree := 0
	for i := range y {
		best, bd := -1, math.Inf(1)
		for j := range y {
			if j == i {
				continue
			}
			dx, dy := y[i][0]-y[j][0], y[i][1]-y[j][1]
			if d := dx*dx + dy*dy; d < bd {
				best, bd = j, d
			}
		}
		if label[best] == label[i] {
			agree++
		}
	}
	return float64(agree) / float64(len(y))
}

func TestEmbedKeepsClustersApart(t *testing.T) {
	cases := []struct {
		name        string
		k, per, dim int
		opt         Options
	}{
		{"50-D without PCA", 10, 40, 50, Options{PCADims: -1, Seed: 1}},
		{"300-D through PCA to 50", 12, 30, 300, Options{Seed: 2}},
		{"perplexity 10, theta 0.8", 8, 25, 50, Options{Perplexity: 10, Theta: 0.8, Seed: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, label := clusters(c.k, c.per, c.dim, 10, 7)
			y, err := Embed(x, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(y) != len(x) {
				t.Fatalf("%d points out for %d in", len(y), len(x))
			}
			if a := nnAgreement(y, label); a <= 0.95 {
				t.Errorf("1-NN label agreement in the map %.3f, want > 0.95", a)
			}
			// Clusters are compact: mean distance within a cluster well below that between clusters.
			var within, between float64
			var nw, nb int
			for i := range y {
				for j := i + 1; j < len(y); j++ {
					d := math.Hypot(y[i][0]-y[j][0], y[i][1]-y[j][1])
					if label[i] == label[j] {
						within, nw = within+d, nw+1
					} else {
						between, nb = between+d, nb+1
					}
				}
			}
			if r := (within / float64(nw)) / (between / float64(nb)); r > 0.3 {
				t.Errorf("mean within-cluster / between-cluster distance %.3f, want < 0.3", r)
			}
		})
	}
}

func TestEmbedDeterministicForSeed(t *testing.T) {
	x, _ := clusters(5, 30, 40, 10, 3)
	run := func(seed uint64) [][2]float64 {
		y, err := Embed(x, Options{Iterations: 300, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	a, b, c := run(11), run(11), run(12)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 11 twice: point %d is %v then %v", i, a[i], b[i])
		}
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Error("seeds 11 and 12 gave the same map")
	}
}

func TestEmbedRejectsBadInput(t *testing.T) {
	ok, _ := clusters(2, 50, 8, 5, 1) // 100 points
	nan := cloneRows(ok)
	nan[3][2] = float32(math.NaN())
	ragged := cloneRows(ok)
	ragged[7] = ragged[7][:5]
	cases := []struct {
		name string
		x    [][]float32
		opt  Options
		want string
	}{
		{"no rows", nil, Options{}, "no rows"},
		{"empty first row", [][]float32{{}, {}}, Options{}, "no values"},
		{"ragged row", ragged, Options{}, "row 7 has 5 values"},
		{"NaN", nan, Options{}, "row 3 value 2"},
		{"perplexity too large for n", ok[:60], Options{Perplexity: 20}, "too large for 60 points"},
		{"perplexity just too large", ok[:90], Options{}, "too large for 90 points"},
		{"perplexity keeps no neighbour", ok, Options{Perplexity: 0.2}, "no neighbour"},
		{"negative perplexity", ok, Options{Perplexity: -1}, "perplexity"},
		{"negative iterations", ok, Options{Iterations: -5}, "iterations"},
		{"negative theta", ok, Options{Theta: -0.5}, "theta"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y, err := Embed(c.x, c.opt)
			if err == nil {
				t.Fatalf("no error; got %d points", len(y))
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
	// The smallest n the default perplexity allows works.
	if _, err := Embed(ok[:91], Options{Iterations: 20}); err != nil {
		t.Errorf("91 points at perplexity 30: %v", err)
	}
}

func cloneRows(x [][]float32) [][]float32 {
	out := make([][]float32, len(x))
	for i, r := range x {
		out[i] = append([]float32(nil), r...)
	}
	return out
}

func TestEmbedReportsProgress(t *testing.T) {
	x, _ := clusters(3, 40, 10, 5, 2)
	var calls, last, total int
	_, err := Embed(x, Options{Iterations: 40, Progress: func(done, tot int) {
		calls++
		if done != last+1 {
			t.Errorf("progress %d after %d", done, last)
		}
		last, total = done, tot
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 40 || last != 40 || total != 40 {
		t.Errorf("progress called %d times, last %d of %d; want 40, 40 of 40", calls, last, total)
	}
}
