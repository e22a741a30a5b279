package optim

import (
	"fmt"
	"math"
	"testing"

	"github.com/sugarme/gotch"
	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/devtest"
	"convrep/internal/torch"
)

// legacyAdam is the update Step made before it moved into internal/torch's shim: eight or nine gotch calls per
// parameter, in the order of adam.go's comment. It is kept here to show that the shim gives the same bits.
type legacyAdam struct {
	cfg     Config
	params  []*ts.Tensor
	group   []int
	data    []*ts.Tensor
	scratch []*ts.Tensor
	m, v    []*ts.Tensor
	steps   []int64
}

func newLegacy(t testing.TB, cfg Config, params []*ts.Tensor, group []int) *legacyAdam {
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	l := &legacyAdam{cfg: cfg, params: params, group: group, m: make([]*ts.Tensor, len(params)),
		v: make([]*ts.Tensor, len(params)), steps: make([]int64, len(params))}
	err = catch(func() {
		for _, p := range params {
			l.data = append(l.data, p.MustDetach(false))
			l.scratch = append(l.scratch, p.MustZerosLike(false))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *legacyAdam) step(t testing.TB, lrs, wds [2]float64) {
	t.Helper()
	err := guarded("legacy step", func() error {
		var s scalars
		defer s.free()
		for k, param := range l.params {
			lr, wd := lrs[l.group[k]], wds[l.group[k]]
			c := &calls{}
			grad := c.grad(param)
			if grad == nil {
				c.release()
				continue
			}
			if l.m[k] == nil {
				l.m[k], l.v[k] = l.data[k].MustZerosLike(false), l.data[k].MustZerosLike(false)
			}
			l.steps[k]++
			data, m, v, sc := handle(l.data[k]), handle(l.m[k]), handle(l.v[k]), handle(l.scratch[k])
			if wd != 0 && l.cfg.Kind == AdamW {
				c.do("decay", func(out *lib.Ctensor) { lib.AtgMulScalar_(out, data, s.float(1-lr*wd)) })
			}
			if wd != 0 && l.cfg.Kind == Adam {
				g := grad
				grad = c.keep("wd·p", func(out *lib.Ctensor) { lib.AtgMulScalar(out, data, s.float(wd)) })
				c.do("g + wd·p", func(out *lib.Ctensor) { lib.AtgAdd_(out, grad, g) })
			}
			c.do("lerp m", func(out *lib.Ctensor) { lib.AtgLerp_(out, m, grad, s.float(1-l.cfg.Beta1)) })
			c.do("g²", func(out *lib.Ctensor) { lib.AtgMulOut(out, sc, grad, grad) })
			c.do("lerp v", func(out *lib.Ctensor) { lib.AtgLerp_(out, v, sc, s.float(1-l.cfg.Beta2)) })
			if lr != 0 {
				bc1 := 1 - math.Pow(l.cfg.Beta1, float64(l.steps[k]))
				bc2 := 1 - math.Pow(l.cfg.Beta2, float64(l.steps[k]))
				negStep := -(lr / bc1)
				c.do("√v", func(out *lib.Ctensor) { lib.AtgSqrtOut(out, sc, v) })
				c.do("d /", func(out *lib.Ctensor) { lib.AtgDivScalar_(out, sc, s.float(math.Sqrt(bc2)*negStep)) })
				c.do("d +", func(out *lib.Ctensor) { lib.AtgAddScalar_(out, sc, s.float(l.cfg.Eps/negStep)) })
				c.do("p += m/d", func(out *lib.Ctensor) { lib.AtgAddcdiv_(out, data, m, sc) })
			}
			c.release()
			if c.err != nil {
				return c.err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setKernels runs the test with Step's kernels chosen, and restores the device's choice after it.
func setKernels(t *testing.T, k torch.Kernels) {
	kernels = k
	t.Cleanup(func() { kernels = torch.DeviceKernels })
}

// Over 100 steps, with both kinds of kernels, Step's parameters and moments keep the very bits of the
// per-tensor gotch calls it replaced: the same ops on the same values, on the CPU. The schedule starts the
// head at learning rate 0, changes the rates every step, and "enc.b" gets its first gradient at step 3 (its
// own step count, hence its own bias correction), "head.d" never.
func TestStepKeepsTheBitsOfThePerTensorCalls(t *testing.T) {
	lockThread(t)
	const steps = 100
	for _, k := range []torch.Kernels{torch.PerTensor, torch.Foreach} {
		for _, c := range []struct {
			kind  string
			wds   [2]float64
			dtype gotch.DType
		}{
			{Adam, [2]float64{0, 0}, gotch.Float},
			{Adam, [2]float64{0.1, 0.3}, gotch.Float},
			{AdamW, [2]float64{0.1, 0.3}, gotch.Float},
			{AdamW, [2]float64{0.05, 0}, gotch.Double},
		} {
			t.Run(fmt.Sprintf("%v/%s/wd%v/%v", kernelName[k], c.kind, c.wds, c.dtype), func(t *testing.T) {
				setKernels(t, k)
				f, old := newFixture(t, c.dtype), newFixture(t, c.dtype)
				opt, err := New(Config{Kind: c.kind}, f.groups([2]float64{1, 1}, c.wds))
				if err != nil {
					t.Fatal(err)
				}
				legacy := newLegacy(t, Config{Kind: c.kind}, old.params, old.group)
				for s := 1; s <= steps; s++ {
					lr := testRates(s)
					opt.SetLR(0, lr[0])
					opt.SetLR(1, lr[1])
					if err := opt.ZeroGrad(); err != nil {
						t.Fatal(err)
					}
					if err := torch.ZeroGrads(old.params); err != nil {
						t.Fatal(err)
					}
					grads := f.grads(s, c.dtype)
					backward(t, f.params, grads)
					backward(t, old.params, grads)
					if err := opt.Step(); err != nil {
						t.Fatal(err)
					}
					legacy.step(t, lr, c.wds)
				}
				for i, name := range f.names {
					if got, want := values(t, f.params[i]), values(t, old.params[i]); !equalBits(got, want) {
						t.Errorf("%s after %d steps: %v, the per-tensor calls give %v", name, steps, got, want)
					}
					p := opt.groups[f.group[i]].params[i%2]
					if p.name != name {
						t.Fatalf("fixture layout changed: %s is not %s", p.name, name)
					}
					if p.step != legacy.steps[i] {
						t.Errorf("%s: step %d, want %d", name, p.step, legacy.steps[i])
					}
					if (p.expAvg == nil) != (legacy.m[i] == nil) {
						t.Fatalf("%s: moments made %v, want %v", name, p.expAvg != nil, legacy.m[i] != nil)
					}
					if p.expAvg != nil && (!equalBits(values(t, p.expAvg), values(t, legacy.m[i])) ||
						!equalBits(values(t, p.expAvgSq), values(t, legacy.v[i]))) {
						t.Errorf("%s: moments differ from the per-tensor calls'", name)
					}
				}
			})
		}
	}
}

// testRates are the two groups' learning rates at step s: the encoder's change every step, the head starts at
// rate 0 for two steps.
func testRates(s int) [2]float64 {
	head := 0.0
	if s > 2 {
		head = 1e-3 * float64(s%5)
	}
	return [2]float64{1e-2 / float64(1+s%7), head}
}

var kernelName = map[torch.Kernels]string{torch.DeviceKernels: "device", torch.PerTensor: "per-tensor", torch.Foreach: "foreach"}

// Step is one call into libtorch per group and ZeroGrad one in all, whatever the number of tensors: the
// count is the same for 3 parameters as for 60, with both kinds of kernels, in the first step (which makes
// the moments) and later ones, and with parameters that have no gradient.
func TestStepCallsIndependentOfTensorCount(t *testing.T) {
	lockThread(t)
	for _, k := range []torch.Kernels{torch.DeviceKernels, torch.PerTensor, torch.Foreach} {
		for _, n := range []int{3, 60} {
			t.Run(fmt.Sprintf("%s/%d tensors", kernelName[k], n), func(t *testing.T) {
				setKernels(t, k)
				groups := []Group{{Name: "encoder", LR: 1e-3, WeightDecay: 0.01}, {Name: "head", LR: 1e-3}}
				var params []*ts.Tensor
				var grads [][]float64
				for i := range n {
					p := leaf(t, []float64{0.1 * float64(i), -0.2, 0.3}, []int64{3}, gotch.Float)
					g := &groups[min(i%3, 1)]
					g.Params, g.ParamNames = append(g.Params, p), append(g.ParamNames, fmt.Sprintf("p%d", i))
					params = append(params, p)
					var grad []float64
					if i%4 != 3 { // a quarter take no part in the loss
						grad = []float64{0.5, -1, 2}
					}
					grads = append(grads, grad)
				}
				opt, err := New(Config{Kind: AdamW}, groups)
				if err != nil {
					t.Fatal(err)
				}
				for s := 1; s <= 2; s++ {
					before := lib.Calls()
					if err := opt.ZeroGrad(); err != nil {
						t.Fatal(err)
					}
					if got := lib.Calls() - before; got != 1 {
						t.Errorf("step %d: ZeroGrad made %d libtorch calls, want 1", s, got)
					}
					backward(t, params, grads)
					before = lib.Calls()
					if err := opt.Step(); err != nil {
						t.Fatal(err)
					}
					if got := lib.Calls() - before; got != 2 {
						t.Errorf("step %d: Step made %d libtorch calls for 2 groups, want 2", s, got)
					}
				}
			})
		}
	}
}

// The fused CPU update (one pass over each parameter, the default on the CPU) keeps the per-tensor update's
// bits over 100 steps, parameters and moments, with both kinds of decay and both dtypes, a parameter that
// joins at step 3 and a group at learning rate 0 for two steps; the step counts are the same. (The lerps are
// fused multiply-adds exactly where libtorch's own lerp kernel is one: ATEN_CPU_CAPABILITY=default go test
// ... checks the other case.)
func TestFusedStepKeepsThePerTensorBits(t *testing.T) {
	lockThread(t)
	const steps = 100
	for _, c := range []struct {
		kind  string
		wds   [2]float64
		dtype gotch.DType
		beta1 float64 // below ½, 1 − β1 is a lerp weight above ½: libtorch's lerp then counts from the end
	}{
		{Adam, [2]float64{0.1, 0.3}, gotch.Float, 0},
		{AdamW, [2]float64{0.1, 0.3}, gotch.Float, 0},
		{AdamW, [2]float64{0.05, 0}, gotch.Double, 0},
		{AdamW, [2]float64{0.1, 0.3}, gotch.Float, 0.3},
	} {
		t.Run(fmt.Sprintf("%s/wd%v/%v/beta1 %v", c.kind, c.wds, c.dtype, c.beta1), func(t *testing.T) {
			f, ref := newFixture(t, c.dtype), newFixture(t, c.dtype)
			fused, err := New(Config{Kind: c.kind, Beta1: c.beta1}, f.groups([2]float64{1, 1}, c.wds))
			if err != nil {
				t.Fatal(err)
			}
			perTensor, err := New(Config{Kind: c.kind, Beta1: c.beta1}, ref.groups([2]float64{1, 1}, c.wds))
			if err != nil {
				t.Fatal(err)
			}
			for s := 1; s <= steps; s++ {
				grads := f.grads(s, c.dtype)
				for k, o := range map[torch.Kernels]*Optimizer{torch.Fused: fused, torch.PerTensor: perTensor} {
					kernels = k
					lr := testRates(s)
					o.SetLR(0, lr[0])
					o.SetLR(1, lr[1])
					if err := o.ZeroGrad(); err != nil {
						t.Fatal(err)
					}
					params := f.params
					if o == perTensor {
						params = ref.params
					}
					backward(t, params, grads)
					if err := o.Step(); err != nil {
						t.Fatal(err)
					}
				}
				kernels = torch.DeviceKernels
			}
			for i, name := range f.names {
				if got, want := values(t, f.params[i]), values(t, ref.params[i]); !equalBits(got, want) {
					t.Errorf("%s after %d steps: fused and per-tensor differ by %.3g relative", name, steps, maxRelDiff(got, want))
				}
				p, q := fused.groups[f.group[i]].params[i%2], perTensor.groups[ref.group[i]].params[i%2]
				if p.step != q.step {
					t.Errorf("%s: step %d fused, %d per tensor", name, p.step, q.step)
				}
				if p.expAvg != nil && (!equalBits(values(t, p.expAvg), values(t, q.expAvg)) ||
					!equalBits(values(t, p.expAvgSq), values(t, q.expAvgSq))) {
					t.Errorf("%s: moments differ between fused and per-tensor", name)
				}
			}
		})
	}
}

// On a parameter long enough for the fused loop's 8-lane AVX2 body (1,003 values: 125 blocks and a tail of
// 3), the fused update still keeps the per-tensor bits over 50 steps, for both lerp forms and both decays.
func TestFusedStepKeepsThePerTensorBitsOnLongTensors(t *testing.T) {
	lockThread(t)
	const n, steps = 1003, 50
	for _, c := range []struct {
		kind  string
		beta1 float64
		dtype gotch.DType
	}{{AdamW, 0, gotch.Float}, {Adam, 0, gotch.Float}, {AdamW, 0.3, gotch.Float}, {AdamW, 0, gotch.Double}} {
		t.Run(fmt.Sprintf("%s/beta1 %v/%v", c.kind, c.beta1, c.dtype), func(t *testing.T) {
			init := make([]float64, n)
			for i := range init {
				init[i] = math.Sin(0.37*float64(i)) * 0.5
			}
			opts := map[torch.Kernels]*Optimizer{}
			params := map[torch.Kernels]*ts.Tensor{}
			for _, k := range []torch.Kernels{torch.Fused, torch.PerTensor} {
				params[k] = leaf(t, roundTo(init, c.dtype), []int64{n}, c.dtype)
				o, err := New(Config{Kind: c.kind, Beta1: c.beta1}, []Group{{Name: "all", Params: []*ts.Tensor{params[k]},
					ParamNames: []string{"w"}, LR: 1e-2, WeightDecay: 0.1}})
				if err != nil {
					t.Fatal(err)
				}
				opts[k] = o
			}
			for s := 1; s <= steps; s++ {
				grad := make([]float64, n)
				for i := range grad {
					grad[i] = math.Cos(0.11*float64(i*s)) * math.Pow(10, float64(i%5-3))
				}
				for k, o := range opts {
					kernels = k
					if err := o.ZeroGrad(); err != nil {
						t.Fatal(err)
					}
					backward(t, []*ts.Tensor{params[k]}, [][]float64{grad})
					if err := o.Step(); err != nil {
						t.Fatal(err)
					}
				}
				kernels = torch.DeviceKernels
			}
			got, want := values(t, params[torch.Fused]), values(t, params[torch.PerTensor])
			if !equalBits(got, want) {
				t.Errorf("after %d steps the fused and per-tensor updates differ by %.3g relative", steps, maxRelDiff(got, want))
			}
		})
	}
}

// DeviceFused is libtorch's _fused_adamw_ / _fused_adam_, on the test device (CONVREP_TEST_DEVICE: cuda in
// scripts/gpu_check.sh). Over 100 steps with the changing rates and the late and missing gradients of the
// fixture, it follows the foreach kernels within float rounding: the same formulas, another order of the
// ops. Against a libtorch without those kernels (Debian's 1.13) the step is refused with an error saying
// which libtorch it needs, and DeviceKernels keeps the foreach kernels.
func TestDeviceFusedStepFollowsTheForeachKernels(t *testing.T) {
	fusedFollowsForeach(t, false)
}

// With device scalars (the update a CUDA graph replays), DeviceFused reads the learning rate and the step from
// the group's row, as torch.optim's capturable fused AdamW does, and follows the foreach kernels reading the
// folded terms from the same row; every parameter takes part from step 1, as device scalars need. On a libtorch
// without the fused kernels' tensor-learning-rate overloads (before 2.3) it says so.
func TestDeviceScalarsOnTheFusedKernels(t *testing.T) {
	fusedFollowsForeach(t, true)
}

// fusedFollowsForeach runs DeviceFused against Foreach on the test device, with device scalars or host ones.
func fusedFollowsForeach(t *testing.T, deviceScalars bool) {
	lockThread(t)
	dev := devtest.Device(t)
	compiled, needs := torch.FusedAdamCompiled(), "libtorch 2.1"
	grads := func(f *fixture, s int) [][]float64 { return f.grads(s, gotch.Float) }
	if deviceScalars {
		compiled, needs = torch.FusedAdamCoefCompiled(), "libtorch 2.3"
		grads = func(f *fixture, s int) [][]float64 { return f.allGrads(s, gotch.Float) }
	}
	newOpt := func(f *fixture, kind string, lrs, wds [2]float64) *Optimizer {
		t.Helper()
		opt, err := New(Config{Kind: kind}, f.groups(lrs, wds))
		if err != nil {
			t.Fatal(err)
		}
		if deviceScalars {
			if err := opt.UseDeviceScalars(); err != nil {
				t.Fatal(err)
			}
		}
		return opt
	}
	if !compiled {
		setKernels(t, torch.DeviceFused)
		f := newFixture(t, gotch.Float)
		opt := newOpt(f, AdamW, [2]float64{1e-3, 1e-3}, [2]float64{0.1, 0})
		backward(t, f.params, grads(f, 5))
		err := opt.Step()
		if err == nil || !contains(err.Error(), needs) {
			t.Fatalf("DeviceFused on a libtorch without its kernels (device scalars %v): error %v, want one naming %s", deviceScalars, err, needs)
		}
		return
	}
	const steps = 100
	for _, kind := range []string{Adam, AdamW} {
		t.Run(kind, func(t *testing.T) {
			runs := map[torch.Kernels][][]float64{}
			for _, k := range []torch.Kernels{torch.Foreach, torch.DeviceFused} {
				setKernels(t, k)
				f := newFixture(t, gotch.Float)
				for i, p := range f.params {
					f.params[i] = p.MustTo(dev, false).MustDetach(true).MustSetRequiresGrad(true, true)
				}
				opt := newOpt(f, kind, [2]float64{1, 1}, [2]float64{0.1, 0.3})
				for s := 1; s <= steps; s++ {
					lr := testRates(s)
					opt.SetLR(0, lr[0])
					opt.SetLR(1, lr[1])
					if err := opt.ZeroGrad(); err != nil {
						t.Fatal(err)
					}
					backward(t, f.params, grads(f, s))
					if err := opt.Step(); err != nil {
						t.Fatalf("step %d: %v", s, err)
					}
				}
				for _, p := range f.params {
					runs[k] = append(runs[k], values(t, p))
				}
			}
			for i := range runs[torch.Foreach] {
				compare(t, fmt.Sprintf("param %d", i), runs[torch.DeviceFused][i], runs[torch.Foreach][i], 1e-5, 1e-3)
			}
		})
	}
}
