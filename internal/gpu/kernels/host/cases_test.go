package host

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"convrep/internal/shared"
	"convrep/safetensors"
)

// fixtureTensor reads one float32 tensor of a tiny checkpoint under ../shared/fixtures.
func fixtureTensor(t *testing.T, model, key string) []float32 {
	t.Helper()
	f := readFixture(t, model)
	tn, ok := f.Lookup(key)
	if !ok {
		t.Fatalf("fixture %s has no tensor %s", model, key)
	}
	v, err := tn.Float32s()
	if err != nil {
		t.Fatalf("fixture %s: %v", model, err)
	}
	return v
}

var fixtureCache sync.Map // model -> *safetensors.File

func readFixture(t *testing.T, model string) *safetensors.File {
	t.Helper()
	if f, ok := fixtureCache.Load(model); ok {
		return f.(*safetensors.File)
	}
	f, err := safetensors.ReadFile(shared.MustPath(t, "fixtures", model, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	fixtureCache.Store(model, f)
	return f
}

// values draws n values of scale·N(0,1) + shift.
func values(r *rand.Rand, n int, scale, shift float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = shift + scale*r.NormFloat64()
	}
	return v
}

func float32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// store is v as T holds it; widen is T's values as float64.
func store[T Storage](v []float64) []T {
	out := make([]T, len(v))
	for i, x := range v {
		switch o := any(&out[i]).(type) {
		case *float32:
			*o = float32(x)
		case *uint16:
			*o = BF16(float32(x))
		}
	}
	return out
}

func widen[T Storage](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		switch y := any(x).(type) {
		case float32:
			out[i] = float64(y)
		case uint16:
			out[i] = float64(math.Float32frombits(uint32(y) << 16))
		}
	}
	return out
}

func widen32(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// lnCase is a dropout + add + LayerNorm problem.
type lnCase struct {
	name        string
	shape       Shape
	gamma, beta []float32
	eps         float32
	drop        Dropout
	x, resid    []float64
	// zeroVariance marks cases with rows of variance 0, where rstd = 1/sqrt(eps) magnifies libtorch's own
	// rounding (its CPU layer_norm gives such a row a mean a few ulps off, and its backward cancels
	// rstd³-sized terms): there the kernels must be no farther from fp64 than libtorch is.
	zeroVariance bool
}

// lnCases are the LayerNorms of the fixture models at their hidden size 32 and their eps (BERT and
// DistilBERT 1e-12, RoBERTa 1e-5), and the edge cases.
func lnCases(t *testing.T) []lnCase {
	r := rand.New(rand.NewPCG(1, 2))
	fixture := func(name, model, key string, eps float32, rows int, p float32) lnCase {
		gamma, beta := fixtureTensor(t, model, key+".weight"), fixtureTensor(t, model, key+".bias")
		n := rows * len(gamma)
		return lnCase{name: name, shape: Shape{rows, len(gamma)}, gamma: gamma, beta: beta, eps: eps,
			drop: Dropout{P: p, Seed: 2024, Offset: 8}, x: values(r, n, 1, 0), resid: values(r, n, 1, 0)}
	}
	random := func(name string, rows, cols int, p, eps float32, x, resid []float64) lnCase {
		return lnCase{name: name, shape: Shape{rows, cols}, gamma: float32s(values(r, cols, 0.2, 1)),
			beta: float32s(values(r, cols, 0.2, 0)), eps: eps, drop: Dropout{P: p, Seed: 0x0123456789abcdef, Offset: 1 << 36},
			x: x, resid: resid}
	}
	equal := func(rows, cols int, x, resid float64) ([]float64, []float64) {
		xs, rs := values(r, rows*cols, 1, 0), values(r, rows*cols, 1, 0)
		for c := range cols { // row 1 is all x + resid
			xs[cols+c], rs[cols+c] = x, resid
		}
		return xs, rs
	}
	eqX, eqR := equal(4, 48, 0.3, -1.7)
	eqX2, eqR2 := equal(3, 33, 1e3, 0.1)
	zero := func(c lnCase) lnCase { c.zeroVariance = true; return c }
	return []lnCase{
		fixture("tiny-bert embeddings", "tiny-bert", "bert.embeddings.LayerNorm", 1e-12, 18, 0.1),
		fixture("tiny-bert layer 1 attention output", "tiny-bert", "bert.encoder.layer.1.attention.output.LayerNorm", 1e-12, 14, 0.1),
		fixture("tiny-roberta layer 0 output", "tiny-roberta", "roberta.encoder.layer.0.output.LayerNorm", 1e-5, 18, 0.1),
		fixture("tiny-distilbert layer 1 sa_layer_norm", "tiny-distilbert", "distilbert.transformer.layer.1.sa_layer_norm", 1e-12, 9, 0.1),
		fixture("tiny-distilbert output_layer_norm, p = 0", "tiny-distilbert", "distilbert.transformer.layer.0.output_layer_norm", 1e-12, 9, 0),
		random("p = 0", 6, 64, 0, 1e-5, values(r, 6*64, 1, 0), values(r, 6*64, 1, 0)),
		random("cols 100, not a multiple of the lanes", 7, 100, 0.25, 1e-5, values(r, 700, 1, 0), values(r, 700, 1, 0)),
		random("cols 768, BERT-base", 5, 768, 0.1, 1e-12, values(r, 5*768, 1, 0), values(r, 5*768, 1, 0)),
		zero(random("one column", 5, 1, 0.1, 1e-5, values(r, 5, 1, 0), values(r, 5, 1, 0))),
		zero(random("a row of equal values, eps 1e-12", 4, 48, 0, 1e-12, eqX, eqR)),
		zero(random("a row of equal large values, eps 1e-5", 3, 33, 0, 1e-5, eqX2, eqR2)),
		random("large magnitude", 6, 96, 0.1, 1e-12, values(r, 576, 1e4, 0), values(r, 576, 3e4, 0)),
		random("far from zero", 6, 96, 0.1, 1e-5, values(r, 576, 1, 0), values(r, 576, 1, 100)),
		random("p = 0.5", 8, 40, 0.5, 1e-5, values(r, 320, 1, 0), values(r, 320, 1, 0)),
	}
}

// geluCase is a bias + GELU problem.
type geluCase struct {
	name  string
	shape Shape
	bias  []float32
	x     []float64
}

// geluCases are the intermediate layers of the fixture models at their size 64, and the edge cases.
func geluCases(t *testing.T) []geluCase {
	r := rand.New(rand.NewPCG(3, 4))
	fixture := func(name, model, key string, rows int) geluCase {
		bias := fixtureTensor(t, model, key)
		return geluCase{name, Shape{rows, len(bias)}, bias, values(r, rows*len(bias), 1, 0)}
	}
	random := func(name string, rows, cols int, x []float64) geluCase {
		return geluCase{name, Shape{rows, cols}, float32s(values(r, cols, 0.5, 0)), x}
	}
	around := make([]float64, 3*21)
	for i := range around { // -1 ... 1 in steps of 0.1, the bend of the curve, three times
		around[i] = float64(i%21-10) / 10
	}
	return []geluCase{
		fixture("tiny-bert layer 0 intermediate", "tiny-bert", "bert.encoder.layer.0.intermediate.dense.bias", 18),
		fixture("tiny-roberta layer 1 intermediate", "tiny-roberta", "roberta.encoder.layer.1.intermediate.dense.bias", 14),
		fixture("tiny-distilbert layer 0 lin1", "tiny-distilbert", "distilbert.transformer.layer.0.ffn.lin1.bias", 9),
		random("cols 3072, BERT-base intermediate", 3, 3072, values(r, 3*3072, 1, 0)),
		random("cols 100, not a multiple of the lanes", 7, 100, values(r, 700, 2, 0)),
		random("one column", 4, 1, values(r, 4, 1, 0)),
		random("large magnitude", 5, 64, values(r, 320, 30, 0)),
		{"near zero", Shape{3, 21}, make([]float32, 21), around},
	}
}

// closeTo fails unless got is within tol·scale of want, scale the largest |want|; for bf16 storage each
// element may also be off by its rounding, 2^-8·|want|.
func closeTo(t *testing.T, what string, got, want []float64, tol float64, bf16 bool) {
	t.Helper()
	closeAtScale(t, what, got, want, tol, maxAbs(want), bf16)
}

func maxAbs(v []float64) float64 {
	m := 1e-30
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// closeAtScale is closeTo at a given scale: that of the data a statistic is taken of, say.
func closeAtScale(t *testing.T, what string, got, want []float64, tol, scale float64, bf16 bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	worst, at := 0.0, -1
	for i := range got {
		allowed := tol * scale
		if bf16 {
			allowed += math.Ldexp(math.Abs(want[i]), -8)
		}
		if d := math.Abs(got[i] - want[i]); !(d <= allowed) {
			if e := d / allowed; at < 0 || e > worst {
				worst, at = e, i
			}
		}
	}
	if at >= 0 {
		t.Errorf("%s: element %d is %.9g, want %.9g (%.3g times the tolerance; scale %.3g)", what, at, got[at], want[at], worst, scale)
	}
}

// noFarther fails unless each element of got is as close to exact as libtorch's is, give or take tol·scale
// (scale the largest |exact|).
func noFarther(t *testing.T, what string, got, torch, exact []float64, tol float64) {
	t.Helper()
	scale := maxAbs(exact)
	for i := range got {
		if d := math.Abs(got[i] - exact[i]); !(d <= math.Abs(torch[i]-exact[i])+tol*scale) {
			t.Errorf("%s: element %d is %.9g, libtorch's %.9g, exact %.9g: farther from exact than libtorch", what, i, got[i], torch[i], exact[i])
			return
		}
	}
}

// newRand is a generator seeded by a case's name, so each case draws its own upstream gradient.
func newRand(name string) *rand.Rand {
	var h uint64 = 14695981039346656037
	for i := range len(name) {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return rand.New(rand.NewPCG(h, 5))
}
