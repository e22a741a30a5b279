package optim

import (
	"fmt"
	"math"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// refParam is the float64 reference for one parameter, following torch.optim.Adam/AdamW 1.13 as written.
type refParam struct {
	p, m, v []float64
	step    int
}

func (r *refParam) update(cfg Config, lr, wd float64, grad []float64) {
	r.step++
	if r.m == nil {
		r.m, r.v = make([]float64, len(r.p)), make([]float64, len(r.p))
	}
	bc1 := 1 - math.Pow(cfg.Beta1, float64(r.step))
	bc2 := 1 - math.Pow(cfg.Beta2, float64(r.step))
	stepSize := lr / bc1
	for i := range r.p {
		g := grad[i]
		if cfg.Kind == AdamW {
			r.p[i] *= 1 - lr*wd
		} else {
			g += wd * r.p[i]
		}
		r.m[i] = cfg.Beta1*r.m[i] + (1-cfg.Beta1)*g
		r.v[i] = cfg.Beta2*r.v[i] + (1-cfg.Beta2)*g*g
		denom := math.Sqrt(r.v[i])/math.Sqrt(bc2) + cfg.Eps
		r.p[i] -= stepSize * r.m[i] / denom
	}
}

// fixture is a small model: four parameters in two groups. "b" first gets a gradient at step 3, "d" never.
type fixture struct {
	names  []string
	shapes [][]int64
	group  []int
	params []*ts.Tensor
	refs   []*refParam
}

func newFixture(t testing.TB, dtype gotch.DType) *fixture {
	f := &fixture{
		names:  []string{"enc.a", "enc.b", "head.c", "head.d"},
		shapes: [][]int64{{2, 3}, {4}, {3}, {2}},
		group:  []int{0, 0, 1, 1},
	}
	for k, shape := range f.shapes {
		n := int(numel(shape))
		init := make([]float64, n)
		for i := range init {
			init[i] = math.Cos(0.9*float64(k)+1.7*float64(i)) * 0.8
		}
		init = roundTo(init, dtype)
		f.params = append(f.params, leaf(t, init, shape, dtype))
		f.refs = append(f.refs, &refParam{p: append([]float64(nil), init...)})
	}
	return f
}

func (f *fixture) groups(lrs, wds [2]float64) []Group {
	gs := []Group{{Name: "encoder", LR: lrs[0], WeightDecay: wds[0]}, {Name: "head", LR: lrs[1], WeightDecay: wds[1]}}
	for k, p := range f.params {
		g := &gs[f.group[k]]
		g.Params = append(g.Params, p)
		g.ParamNames = append(g.ParamNames, f.names[k])
	}
	return gs
}

// grads of step s (1-based): nil where the parameter takes no part. The magnitudes vary over four orders
// so that eps and the bias corrections matter.
func (f *fixture) grads(s int, dtype gotch.DType) [][]float64 {
	out := make([][]float64, len(f.params))
	for k, shape := range f.shapes {
		if f.names[k] == "head.d" || (f.names[k] == "enc.b" && s < 3) {
			continue
		}
		g := make([]float64, numel(shape))
		for i := range g {
			g[i] = math.Sin(1.3*float64(k)+0.7*float64(s)+float64(i)) * math.Pow(10, float64((i+k)%4-2))
		}
		out[k] = roundTo(g, dtype)
	}
	return out
}

// run takes steps with the learning rates lrs[s][group] on both libtorch and the reference.
func (f *fixture) run(t *testing.T, opt *Optimizer, cfg Config, wds [2]float64, lrs [][2]float64, dtype gotch.DType) {
	t.Helper()
	for s, lr := range lrs {
		opt.SetLR(0, lr[0])
		opt.SetLR(1, lr[1])
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		grads := f.grads(s+1, dtype)
		backward(t, f.params, grads)
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		for k, g := range grads {
			if g == nil && f.refs[k].m == nil {
				continue // no gradient yet: torch skips the parameter
			}
			if g == nil {
				g = make([]float64, len(f.refs[k].p)) // zeroed, not unset: still updated
			}
			f.refs[k].update(cfg, lr[f.group[k]], wds[f.group[k]], g)
		}
	}
}

func TestStepMatchesReference(t *testing.T) {
	lockThread(t)
	// Group 1 starts at lr 0 as under warmup; group 0 changes its rate every step.
	lrs := [][2]float64{{1e-2, 0}, {2e-2, 3e-3}, {5e-3, 1e-3}, {1e-2, 3e-3}, {1e-3, 1e-2}}
	cases := []struct {
		name  string
		cfg   Config
		wds   [2]float64
		dtype gotch.DType
		tol   float64
	}{
		{"adam f32", Config{Kind: Adam}, [2]float64{0, 0}, gotch.Float, 1e-6},
		{"adam f32 l2", Config{Kind: Adam}, [2]float64{0.1, 0.3}, gotch.Float, 1e-6},
		{"adamw f32", Config{Kind: AdamW}, [2]float64{0.1, 0.3}, gotch.Float, 1e-6},
		{"adam f64 l2", Config{Kind: Adam}, [2]float64{0.05, 0}, gotch.Double, 1e-12},
		{"adamw f64", Config{Kind: AdamW}, [2]float64{0.05, 0.2}, gotch.Double, 1e-12},
		{"adamw f64 betas", Config{Kind: AdamW, Beta1: 0.8, Beta2: 0.95, Eps: 1e-3}, [2]float64{0.01, 0}, gotch.Double, 1e-12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.dtype)
			opt, err := New(c.cfg, f.groups([2]float64{1, 1}, c.wds))
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := c.cfg.withDefaults()
			f.run(t, opt, cfg, c.wds, lrs, c.dtype)
			if opt.StepCount() != int64(len(lrs)) {
				t.Errorf("StepCount() = %d, want %d", opt.StepCount(), len(lrs))
			}
			tensors, _, err := opt.State()
			if err != nil {
				t.Fatal(err)
			}
			state := map[string][]float64{}
			for _, st := range tensors {
				state[st.Name] = decodeFloats(t, st)
			}
			for k, name := range f.names {
				ref := f.refs[k]
				compare(t, name, values(t, f.params[k]), ref.p, c.tol, 1)
				if ref.m == nil {
					continue
				}
				compare(t, name+".exp_avg", state[name+".exp_avg"], ref.m, c.tol, maxAbs(ref.m))
				compare(t, name+".exp_avg_sq", state[name+".exp_avg_sq"], ref.v, c.tol, maxAbs(ref.v))
				if got := state[name+".step"]; len(got) != 1 || got[0] != float64(ref.step) {
					t.Errorf("%s.step = %v, want %d", name, got, ref.step)
				}
			}
		})
	}
}

// Parameters without a gradient keep their exact bits; "enc.b" only from step 3 on.
func TestParamsWithoutGradUntouched(t *testing.T) {
	lockThread(t)
	f := newFixture(t, gotch.Float)
	opt, err := New(Config{Kind: AdamW}, f.groups([2]float64{1e-2, 1e-2}, [2]float64{0.1, 0.1}))
	if err != nil {
		t.Fatal(err)
	}
	before := map[string][]float64{}
	for k, name := range f.names {
		before[name] = values(t, f.params[k])
	}
	for s := 1; s <= 4; s++ {
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		backward(t, f.params, f.grads(s, gotch.Float))
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		for k, name := range f.names {
			untouched := name == "head.d" || (name == "enc.b" && s < 3)
			same := equalBits(values(t, f.params[k]), before[name])
			if untouched != same {
				t.Errorf("step %d: %s changed = %v, want %v", s, name, !same, !untouched)
			}
		}
	}
	if g := gradValues(t, f.params[3]); g != nil {
		t.Errorf("head.d has gradient %v after ZeroGrad/Step, want none", g)
	}
}

// With weight decay 0 Adam and AdamW are the same algorithm, bit for bit; with decay they differ.
func TestAdamAndAdamWDifferOnlyByDecay(t *testing.T) {
	lockThread(t)
	lrs := [][2]float64{{1e-2, 1e-2}, {1e-2, 1e-2}, {1e-2, 1e-2}}
	final := func(kind string, wd float64) [][]float64 {
		f := newFixture(t, gotch.Float)
		wds := [2]float64{wd, wd}
		opt, err := New(Config{Kind: kind}, f.groups([2]float64{1, 1}, wds))
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := Config{Kind: kind}.withDefaults()
		f.run(t, opt, cfg, wds, lrs, gotch.Float)
		var out [][]float64
		for _, p := range f.params {
			out = append(out, values(t, p))
		}
		return out
	}
	for _, c := range []struct {
		wd   float64
		same bool
	}{{0, true}, {0.1, false}} {
		a, w := final(Adam, c.wd), final(AdamW, c.wd)
		same := true
		for k := range a[:3] { // "head.d" never moves in either
			same = same && equalBits(a[k], w[k])
		}
		if same != c.same {
			t.Errorf("weight decay %v: Adam and AdamW equal = %v, want %v", c.wd, same, c.same)
		}
	}
}

func TestZeroGrad(t *testing.T) {
	lockThread(t)
	f := newFixture(t, gotch.Float)
	opt, err := New(Config{Kind: Adam}, f.groups([2]float64{1e-3, 1e-3}, [2]float64{}))
	if err != nil {
		t.Fatal(err)
	}
	backward(t, f.params, f.grads(3, gotch.Float))
	if maxAbs(gradValues(t, f.params[0])) == 0 {
		t.Fatal("backward left a zero gradient")
	}
	if err := opt.ZeroGrad(); err != nil {
		t.Fatal(err)
	}
	for k, name := range f.names {
		g := gradValues(t, f.params[k])
		if name == "head.d" {
			if g != nil {
				t.Errorf("%s: ZeroGrad created gradient %v", name, g)
			}
			continue
		}
		if g == nil || maxAbs(g) != 0 {
			t.Errorf("%s: gradient after ZeroGrad = %v, want zeros", name, g)
		}
	}
}

func TestNewRejects(t *testing.T) {
	lockThread(t)
	p := leaf(t, []float64{1, 2}, []int64{2}, gotch.Float)
	q := leaf(t, []float64{1, 2}, []int64{2}, gotch.Float)
	var ints *ts.Tensor
	if err := catch(func() { ints = ts.MustOfSlice([]int64{1, 2}) }); err != nil {
		t.Fatal(err)
	}
	one := func(name string, params ...*ts.Tensor) []Group {
		names := make([]string, len(params))
		for i := range names {
			names[i] = fmt.Sprintf("%s%d", name, i)
		}
		return []Group{{Name: "g", Params: params, ParamNames: names, LR: 1e-3}}
	}
	cases := []struct {
		name   string
		cfg    Config
		groups []Group
		want   string
	}{
		{"kind", Config{Kind: "sgd"}, one("p", p), `kind "sgd"`},
		{"beta1", Config{Kind: Adam, Beta1: 1}, one("p", p), "beta1"},
		{"beta2", Config{Kind: Adam, Beta2: -0.5}, one("p", p), "beta2"},
		{"eps", Config{Kind: Adam, Eps: math.Inf(1)}, one("p", p), "eps"},
		{"no groups", Config{Kind: Adam}, nil, "no parameter groups"},
		{"names", Config{Kind: Adam}, []Group{{Params: []*ts.Tensor{p}, LR: 1}}, "1 params but 0 names"},
		{"empty name", Config{Kind: Adam}, []Group{{Params: []*ts.Tensor{p}, ParamNames: []string{""}}}, "no name"},
		{"duplicate", Config{Kind: Adam}, append(one("p", p), one("p", q)...), `"p0" is already in group`},
		{"nil", Config{Kind: Adam}, one("p", nil), `"p0" is nil`},
		{"dtype", Config{Kind: Adam}, one("ints", ints), `"ints0" has dtype`},
		{"lr", Config{Kind: Adam}, []Group{{Params: []*ts.Tensor{p}, ParamNames: []string{"p"}, LR: -1}}, "learning rate"},
		{"wd", Config{Kind: Adam}, []Group{{Params: []*ts.Tensor{p}, ParamNames: []string{"p"}, WeightDecay: math.NaN()}}, "weight decay"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.cfg, c.groups)
			if err == nil || !contains(err.Error(), c.want) {
				t.Fatalf("New: error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestSetLR(t *testing.T) {
	lockThread(t)
	f := newFixture(t, gotch.Float)
	opt, err := New(Config{Kind: Adam}, f.groups([2]float64{1e-3, 2e-3}, [2]float64{}))
	if err != nil {
		t.Fatal(err)
	}
	if opt.LR(0) != 1e-3 || opt.LR(1) != 2e-3 || !math.IsNaN(opt.LR(2)) || opt.NumGroups() != 2 {
		t.Fatalf("LR(0), LR(1), LR(2), NumGroups() = %v, %v, %v, %d", opt.LR(0), opt.LR(1), opt.LR(2), opt.NumGroups())
	}
	opt.SetLR(1, 5e-4)
	if opt.LR(1) != 5e-4 {
		t.Fatalf("LR(1) = %v after SetLR(1, 5e-4)", opt.LR(1))
	}
	opt.SetLR(2, 1e-3)
	if err := opt.Step(); err == nil || !contains(err.Error(), "group 2") {
		t.Fatalf("Step after SetLR(2, ...) with 2 groups: error %v", err)
	}
	if opt.StepCount() != 0 {
		t.Fatalf("a refused Step counted: StepCount() = %d", opt.StepCount())
	}
}
