package tsne

import (
	"math/rand/v2"
	"testing"
)

// clincLike is shaped like CLINC150's test split embedded by a model: 150 intents of 30 queries round
// their own centres, and 1,000 out-of-scope queries scattered over the same space, in 768 dimensions.
func clincLike() [][]float32 {
	x, _ := clusters(150, 30, 768, 1, 5)
	rng := rand.New(rand.NewPCG(6, 2))
	for i := 0; i < 1000; i++ {
		row := make([]float32, 768)
		for j := range row {
			row[j] = float32(rng.NormFloat64() * 1.2)
		}
		x = append(x, row)
	}
	return x
}

// BenchmarkEmbed5500x768 times the full pipeline (PCA to 50, neighbours, affinities, 1,000 iterations)
// at the size of the DSE paper's Figure 1.
func BenchmarkEmbed5500x768(b *testing.B) {
	x := clincLike()
	for b.Loop() {
		if _, err := Embed(x, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGradient5500 times one Barnes-Hut gradient on a clustered map of 5,500 points.
func BenchmarkGradient5500(b *testing.B) {
	y := testMap(5500, 4)
	x := make([][]float32, len(y)/2)
	for i := range x {
		x[i] = []float32{float32(y[2*i]), float32(y[2*i+1])}
	}
	data, n, d, err := flatten(x)
	if err != nil {
		b.Fatal(err)
	}
	p, err := affinities(nearest(data, n, d, 90), 30)
	if err != nil {
		b.Fatal(err)
	}
	g := newGradient(n)
	grad := make([]float64, len(y))
	for b.Loop() {
		g.compute(p, y, 1, 0.5, grad)
	}
}
