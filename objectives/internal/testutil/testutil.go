// Package testutil holds what the objectives' tests share: tiny encoders, padded inputs, the DSE fixture's
// tensors, finite-difference gradient checks and building an objective by name.
package testutil

import (
	"math"
	"runtime"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/inputs"
	"convrep/safetensors"
)

// GradOn pins the test's goroutine to its OS thread and turns grad mode on there. Grad mode is per thread,
// and gotch's initialisers (used by models.New) toggle it with ts.NoGrad on whichever thread they run, so
// an unpinned goroutine can land on a thread that an earlier one left with grad off.
func GradOn(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	if _, err := ts.GradSetEnabled(true); err != nil {
		t.Fatal(err)
	}
}

// TinyBERT is a seeded 2-layer BERT of width 16 without heads.
func TinyBERT(t *testing.T, seed uint64) *models.Model { return tiny(t, seed, models.Heads{}, false) }

// tiny is a seeded 2-layer BERT of width 16 over a vocabulary of 50, with heads, in float64 when double.
func tiny(t *testing.T, seed uint64, heads models.Heads, double bool) *models.Model {
	t.Helper()
	GradOn(t)
	if err := torch.ManualSeed(seed); err != nil {
		t.Fatal(err)
	}
	c := &models.Config{Arch: models.BERT, VocabSize: 50, HiddenSize: 16, NumLayers: 2, NumHeads: 2,
		IntermediateSize: 32, HiddenAct: "gelu", HiddenDropout: 0.1, AttentionDropout: 0.1, MaxPositions: 32,
		TypeVocabSize: 2, LayerNormEps: 1e-12, InitializerRange: 0.02, TieWordEmbeddings: true}
	var m *models.Model
	var err error
	build := func() { m, err = models.New(c, heads, gotch.CPU) }
	if double {
		WithDouble(build)
	} else {
		build()
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Input builds an Input from token rows, padded with id 0 to length.
func Input(Rows [][]int64, length int) models.Input {
	var ids, mask []int64
	for _, r := range Rows {
		for i := 0; i < length; i++ {
			if i < len(r) {
				ids, mask = append(ids, r[i]), append(mask, 1)
			} else {
				ids, mask = append(ids, 0), append(mask, 0)
			}
		}
	}
	shape := []int64{int64(len(Rows)), int64(length)}
	return models.Input{IDs: ts.MustOfSlice(ids).MustView(shape, true), Mask: ts.MustOfSlice(mask).MustView(shape, true)}
}

func AbsSum(t *testing.T, x *ts.Tensor) float64 {
	t.Helper()
	if x == nil || !x.MustDefined() {
		return 0
	}
	return x.MustAbs(false).MustSum(gotch.Double, true).Float64Values(true)[0]
}

// Values returns a fixture tensor as float64 whatever its stored dtype.
func Values(t *testing.T, f *safetensors.File, name string) []float64 {
	t.Helper()
	tn, ok := f.Lookup(name)
	if !ok {
		t.Fatalf("fixture has no tensor %q", name)
	}
	switch tn.DType {
	case safetensors.F32:
		v, err := tn.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	case safetensors.F64:
		v, err := tn.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	case safetensors.I64:
		v, err := tn.Int64s()
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	t.Fatalf("%s: unexpected dtype %s", name, tn.DType)
	return nil
}

// Leaf makes a [8,16] tensor of the fixture's values in dtype, tracking gradients.
func Leaf(t *testing.T, f *safetensors.File, name string, dtype gotch.DType) *ts.Tensor {
	t.Helper()
	x := ts.MustOfSlice(Values(t, f, name)).MustView([]int64{8, 16}, true).MustTotype(dtype, true)
	x.MustRequiresGrad_(true)
	return x
}

func MaxDiff(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range got {
		if math.IsNaN(got[i]) {
			return math.Inf(1)
		}
		d = math.Max(d, math.Abs(got[i]-want[i]))
	}
	return d
}

func MaxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(x))
	}
	return m
}

// DoubleLeaf makes a float64 Leaf tensor of shape from Values, tracking gradients.
func DoubleLeaf(vals []float64, shape []int64) *ts.Tensor {
	x := ts.MustOfSlice(vals).MustView(shape, true)
	x.MustRequiresGrad_(true)
	return x
}

// CheckGradient compares the gradient of loss(x) at x (backward) with central finite differences
// (float64, step h), for every entry of x.
func CheckGradient(t *testing.T, x *ts.Tensor, loss func(x *ts.Tensor) *ts.Tensor) {
	t.Helper()
	GradOn(t)
	l := loss(x)
	l.MustBackward()
	grad := x.MustGrad(false).Float64Values()
	l.MustDrop()
	base := x.MustDetach(false).Float64Values()
	shape := x.MustSize()
	const h = 1e-6
	at := func(vals []float64) float64 {
		y := ts.MustOfSlice(vals).MustView(shape, true)
		v := loss(y)
		out := v.Float64Values()[0]
		DropAll(v, y)
		return out
	}
	worst := 0.0
	for i := range base {
		p := append([]float64(nil), base...)
		p[i] += h
		m := append([]float64(nil), base...)
		m[i] -= h
		num := (at(p) - at(m)) / (2 * h)
		worst = math.Max(worst, math.Abs(num-grad[i])/math.Max(1, math.Abs(num)))
	}
	t.Logf("finite differences: worst relative gradient error %.3g over %d entries", worst, len(base))
	if worst > 1e-6 {
		t.Errorf("gradient differs from finite differences by %g", worst)
	}
}

// WithDouble builds what fn builds with float64 as libtorch's default dtype.
func WithDouble(fn func()) {
	prev := gotch.SetDefaultDType(gotch.Double)
	defer gotch.SetDefaultDType(prev)
	fn()
}

// Pseudo returns n reproducible Values in (−scale, scale).
func Pseudo(n int, seed uint64, scale float64) []float64 {
	out := make([]float64, n)
	s := seed*0x9e3779b97f4a7c15 + 1
	for i := range out {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		out[i] = (float64(s%20001)/10000 - 1) * scale
	}
	return out
}

func DropAll(xs ...*ts.Tensor) {
	for _, x := range xs {
		x.MustDrop()
	}
}

func Rows(vals []float64, n, d int) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = vals[i*d : (i+1)*d]
	}
	return out
}

func Sum(xs []int64) int {
	s := 0
	for _, x := range xs {
		s += int(x)
	}
	return s
}

func Seq(from, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = from + int64(i)
	}
	return out
}

// TinyMLMBERT is TinyBERT with an MLM head, in float64 when double.
func TinyMLMBERT(t *testing.T, seed uint64, double bool) *models.Model {
	return tiny(t, seed, models.Heads{MLM: true}, double)
}

// New builds the objective registered under name on m, as the trainer does from an [objective] table.
func New(name string, m *models.Model, s objectives.Settings) (objectives.Objective, error) {
	table := map[string]any{"name": name}
	for k, v := range s {
		table[k] = v
	}
	return objectives.Build(table, m)
}

// RequirementsOf is what the objective registered under name needs with its default settings.
func RequirementsOf(name string) objectives.Requirements {
	c, err := objectives.Parse(map[string]any{"name": name})
	if err != nil {
		return objectives.Requirements{}
	}
	return c.Needs()
}

// Queries and Responses are four token rows each of a 50-word vocabulary ([CLS] = 2, [SEP] = 3): the views of
// four pairs.
var (
	Queries   = [][]int64{{2, 7, 9, 3}, {2, 11, 3}, {2, 5, 6, 8, 3}, {2, 40, 41, 3}}
	Responses = [][]int64{{2, 12, 13, 14, 3}, {2, 7, 3}, {2, 20, 21, 22, 23, 3}, {2, 30, 3}}
)

// Labels is inputs.LabelsOf on the CPU: MLM label rows (IgnoreLabel where nothing was chosen).
func Labels(t testing.TB, rows [][]int64) inputs.Labels {
	t.Helper()
	l, err := inputs.LabelsOf(rows, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// LabelRows expands l back into [Rows][Width] label rows, IgnoreLabel where nothing was chosen.
func LabelRows(t testing.TB, l inputs.Labels) [][]int64 {
	t.Helper()
	rows := make([][]int64, l.Rows)
	for i := range rows {
		rows[i] = make([]int64, l.Width)
		for j := range rows[i] {
			rows[i][j] = inputs.IgnoreLabel
		}
	}
	pos, target := l.Pos.Int64Values(), l.Target.Int64Values()
	for k, p := range pos {
		if p < 0 || p >= l.Rows*l.Width {
			t.Fatalf("label position %d outside [%d %d]", p, l.Rows, l.Width)
		}
		rows[p/l.Width][p%l.Width] = target[k]
	}
	return rows
}

// Metrics reads an objective's metrics back (the trainer reads them once per metrics line; a test may
// read them at once), checking that each is a detached 0-dim Float tensor, and drops them.
func Metrics(t testing.TB, m map[string]*ts.Tensor) map[string]float64 {
	t.Helper()
	defer objectives.DropMetrics(m)
	out := map[string]float64{}
	for name, x := range m {
		if x.Dim() != 0 || x.DType() != gotch.Float || x.MustRequiresGrad() {
			t.Fatalf("metric %s: %v tensor of shape %v (requires grad %v), want a detached 0-dim Float",
				name, x.DType(), x.MustSize(), x.MustRequiresGrad())
		}
		out[name] = x.Float64Values()[0]
	}
	return out
}
