package optim

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/safetensors"
)

// resumeSteps trains the fixture with AdamW and a warmup schedule; learning rates come from StepCount, so a
// restored step count matters too.
func resumeSteps(t *testing.T, f *fixture, opt *Optimizer, from, to int) {
	t.Helper()
	sched := LinearWarmup(2, 10)
	base := [2]float64{1e-2, 3e-3}
	for s := from; s < to; s++ {
		if opt.StepCount() != int64(s) {
			t.Fatalf("StepCount() = %d before step %d", opt.StepCount(), s+1)
		}
		for g := range base {
			opt.SetLR(g, base[g]*sched.Factor(opt.StepCount()))
		}
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		backward(t, f.params, f.grads(s+1, gotch.Float))
		if _, err := ClipGradNorm(f.params, 0.5); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
}

var resumeWDs = [2]float64{0.1, 0.01}

// State → safetensors file bytes and JSON → LoadState into a fresh optimiser over fresh parameters holding
// the checkpointed values, then continuing, must give the bits of an uninterrupted run.
func TestResumeIsBitIdentical(t *testing.T) {
	lockThread(t)
	const total, cut = 7, 3 // "enc.b" joins at step 3: its step count differs from the others at the cut

	whole := newFixture(t, gotch.Float)
	opt, err := New(Config{Kind: AdamW}, whole.groups([2]float64{}, resumeWDs))
	if err != nil {
		t.Fatal(err)
	}
	resumeSteps(t, whole, opt, 0, total)

	first := newFixture(t, gotch.Float)
	opt1, err := New(Config{Kind: AdamW}, first.groups([2]float64{}, resumeWDs))
	if err != nil {
		t.Fatal(err)
	}
	resumeSteps(t, first, opt1, 0, cut)
	tensors, scalars, err := opt1.State()
	if err != nil {
		t.Fatal(err)
	}
	tensors, scalars = throughFiles(t, tensors, scalars)

	second := newFixture(t, gotch.Float)
	for k, p := range first.params { // the checkpoint's parameter values
		second.params[k] = leaf(t, values(t, p), second.shapes[k], gotch.Float)
	}
	opt2, err := New(Config{Kind: AdamW}, second.groups([2]float64{}, resumeWDs))
	if err != nil {
		t.Fatal(err)
	}
	if err := opt2.LoadState(tensors, scalars); err != nil {
		t.Fatal(err)
	}
	resumeSteps(t, second, opt2, cut, total)

	for k, name := range whole.names {
		if a, b := values(t, whole.params[k]), values(t, second.params[k]); !equalBits(a, b) {
			t.Errorf("%s: resumed %v, uninterrupted %v", name, b, a)
		}
	}
	a, _, err := opt.State()
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := opt2.State()
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Errorf("state %q differs after resuming", a[i].Name)
		}
	}
}

// throughFiles sends the state through a safetensors file and the scalars through JSON, as a checkpoint does.
func throughFiles(t *testing.T, tensors []safetensors.Tensor, scalars map[string]any) ([]safetensors.Tensor, map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	if err := safetensors.Encode(&buf, nil, tensors); err != nil {
		t.Fatal(err)
	}
	file, err := safetensors.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var back []safetensors.Tensor
	for _, st := range tensors {
		got, ok := file.Lookup(st.Name)
		if !ok {
			t.Fatalf("%q lost in the file", st.Name)
		}
		back = append(back, got)
	}
	js, err := json.Marshal(scalars)
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(js, &decoded); err != nil {
		t.Fatal(err)
	}
	return back, decoded
}

func TestStateOfFreshOptimiser(t *testing.T) {
	lockThread(t)
	f := newFixture(t, gotch.Double)
	opt, err := New(Config{Kind: Adam}, f.groups([2]float64{1e-3, 1e-3}, [2]float64{}))
	if err != nil {
		t.Fatal(err)
	}
	tensors, scalars, err := opt.State()
	if err != nil {
		t.Fatal(err)
	}
	if len(tensors) != 3*len(f.names) || scalars["step"] != int64(0) || scalars["kind"] != Adam {
		t.Fatalf("fresh state: %d tensors, scalars %v", len(tensors), scalars)
	}
	for _, st := range tensors {
		if maxAbs(decodeFloats(t, st)) != 0 {
			t.Errorf("fresh state %q is not zero", st.Name)
		}
		if want := safetensors.F64; st.DType != want && st.DType != safetensors.I64 {
			t.Errorf("fresh state %q has dtype %s", st.Name, st.DType)
		}
	}
}

func TestLoadStateRejects(t *testing.T) {
	lockThread(t)
	f := newFixture(t, gotch.Float)
	opt, err := New(Config{Kind: AdamW}, f.groups([2]float64{1e-2, 1e-2}, [2]float64{}))
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 3; s++ {
		backward(t, f.params, f.grads(s, gotch.Float))
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	good, goodScalars, err := opt.State()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(fn func(ts []safetensors.Tensor) []safetensors.Tensor) []safetensors.Tensor {
		c := append([]safetensors.Tensor(nil), good...)
		return fn(c)
	}
	without := func(name string) []safetensors.Tensor {
		return edit(func(c []safetensors.Tensor) []safetensors.Tensor {
			for i := range c {
				if c[i].Name == name {
					return append(c[:i], c[i+1:]...)
				}
			}
			t.Fatalf("no %q in the state", name)
			return nil
		})
	}
	replaced := func(name string, st safetensors.Tensor) []safetensors.Tensor {
		return edit(func(c []safetensors.Tensor) []safetensors.Tensor {
			for i := range c {
				if c[i].Name == name {
					c[i] = st
				}
			}
			return c
		})
	}
	reshaped, _ := safetensors.FromFloat32s("enc.a.exp_avg_sq", []int64{3, 2}, make([]float32, 6))
	f64, _ := safetensors.FromFloat64s("head.c.exp_avg", []int64{3}, make([]float64, 3))
	bigStep, _ := safetensors.FromInt64s("enc.b.step", []int64{}, []int64{9})
	extra, _ := safetensors.FromFloat32s("enc.z.exp_avg", []int64{1}, []float32{0})
	cases := []struct {
		name    string
		tensors []safetensors.Tensor
		scalars map[string]any
		want    string
	}{
		{"missing moment", without("enc.a.exp_avg"), goodScalars, `"enc.a.exp_avg" is missing`},
		{"missing step", without("head.d.step"), goodScalars, `"head.d.step" is missing`},
		{"shape", replaced("enc.a.exp_avg_sq", reshaped), goodScalars, `"enc.a.exp_avg_sq" has shape [3 2]`},
		{"dtype", replaced("head.c.exp_avg", f64), goodScalars, `"head.c.exp_avg" has dtype F64`},
		{"step beyond count", replaced("enc.b.step", bigStep), goodScalars, `"enc.b.step" = [9]`},
		{"unknown tensor", append(edit(func(c []safetensors.Tensor) []safetensors.Tensor { return c }), extra), goodScalars, `enc.z.exp_avg`},
		{"duplicate", append(edit(func(c []safetensors.Tensor) []safetensors.Tensor { return c }), good[0]), goodScalars, `appears twice`},
		{"no step scalar", good, map[string]any{"kind": AdamW}, `scalar "step" is missing`},
		{"fractional step", good, map[string]any{"step": 2.5}, `scalar "step" = 2.5`},
		{"negative step", good, map[string]any{"step": -1}, `negative`},
		{"kind", good, map[string]any{"step": 3, "kind": Adam}, `saved by adam`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := opt.LoadState(c.tensors, c.scalars)
			if err == nil || !contains(err.Error(), c.want) {
				t.Fatalf("LoadState: error %v, want one containing %q", err, c.want)
			}
			after, scalars, err := opt.State()
			if err != nil {
				t.Fatal(err)
			}
			if scalars["step"] != goodScalars["step"] {
				t.Errorf("step changed to %v by a refused load", scalars["step"])
			}
			for i := range after {
				if !bytes.Equal(after[i].Data, good[i].Data) {
					t.Errorf("%q changed by a refused load", after[i].Name)
				}
			}
		})
	}
}

// A load replaces state already there, and a parameter saved with step 0 loses its moments.
func TestLoadStateReplaces(t *testing.T) {
	lockThread(t)
	f := newFixture(t, gotch.Float)
	opt, err := New(Config{Kind: Adam}, f.groups([2]float64{1e-2, 1e-2}, [2]float64{}))
	if err != nil {
		t.Fatal(err)
	}
	fresh, freshScalars, err := opt.State()
	if err != nil {
		t.Fatal(err)
	}
	backward(t, f.params, f.grads(4, gotch.Float))
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	if err := opt.LoadState(fresh, map[string]any{"step": json.Number("0"), "kind": freshScalars["kind"]}); err != nil {
		t.Fatal(err)
	}
	if opt.StepCount() != 0 {
		t.Fatalf("StepCount() = %d after loading a fresh state", opt.StepCount())
	}
	for _, p := range opt.groups[0].params {
		if p.expAvg != nil || p.step != 0 {
			t.Errorf("%s kept its moments (step %d)", p.name, p.step)
		}
	}
	// The first step after the load is again a first step: equal to a fresh optimiser's.
	ref := &refParam{p: values(t, f.params[0])}
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	cfg, _ := Config{Kind: Adam}.withDefaults()
	ref.update(cfg, 1e-2, 0, f.grads(4, gotch.Float)[0])
	compare(t, "enc.a", values(t, f.params[0]), ref.p, 1e-6, 1)
}
