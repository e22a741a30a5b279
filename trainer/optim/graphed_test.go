package optim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/internal/torch"
)

// allGrads is the fixture's gradients of step s with every parameter but "head.d" in from step 1: device
// scalars need a group's updated parameters at one step count.
func (f *fixture) allGrads(s int, dtype gotch.DType) [][]float64 {
	g := f.grads(max(s, 3), dtype)
	if s < 3 {
		h := f.grads(s, dtype)
		for k := range g {
			if h[k] != nil {
				g[k] = h[k]
			}
		}
	}
	return g
}

// Over 100 steps, Step with device scalars (the update a CUDA graph replays) keeps the very bits of Step with
// host scalars on the CPU, parameters and moments: the same ops, with a 0-dim tensor where a number was. With
// both kinds of kernels, both kinds of decay and both dtypes, the head starting at learning rate 0 (where the
// device form adds m/∞ instead of skipping). The step counts advance alike.
func TestDeviceScalarsMatchHostScalars(t *testing.T) {
	lockThread(t)
	const steps = 100
	for _, k := range []torch.Kernels{torch.PerTensor, torch.Foreach} {
		for _, c := range []struct {
			kind  string
			wds   [2]float64
			dtype gotch.DType
		}{
			{Adam, [2]float64{0.1, 0.3}, gotch.Float},
			{AdamW, [2]float64{0.1, 0.3}, gotch.Float},
			{AdamW, [2]float64{0.05, 0}, gotch.Double},
		} {
			t.Run(fmt.Sprintf("%v/%s/wd%v/%v", kernelName[k], c.kind, c.wds, c.dtype), func(t *testing.T) {
				setKernels(t, k)
				host, dev := newFixture(t, c.dtype), newFixture(t, c.dtype)
				hostOpt, err := New(Config{Kind: c.kind}, host.groups([2]float64{1, 1}, c.wds))
				if err != nil {
					t.Fatal(err)
				}
				devOpt, err := New(Config{Kind: c.kind}, dev.groups([2]float64{1, 1}, c.wds))
				if err != nil {
					t.Fatal(err)
				}
				if err := devOpt.UseDeviceScalars(); err != nil {
					t.Fatal(err)
				}
				for s := 1; s <= steps; s++ {
					lr := testRates(s)
					for _, o := range []*Optimizer{hostOpt, devOpt} {
						o.SetLR(0, lr[0])
						o.SetLR(1, lr[1])
						if err := o.ZeroGrad(); err != nil {
							t.Fatal(err)
						}
					}
					grads := host.allGrads(s, c.dtype)
					backward(t, host.params, grads)
					backward(t, dev.params, grads)
					if err := hostOpt.Step(); err != nil {
						t.Fatal(err)
					}
					if err := devOpt.Step(); err != nil {
						t.Fatalf("step %d: %v", s, err)
					}
				}
				for i, name := range host.names {
					got, want := values(t, dev.params[i]), values(t, host.params[i])
					if !equalBits(got, want) {
						t.Errorf("%s after %d steps: device scalars %v, host scalars %v (relative difference %.3g)", name, steps, got, want, maxRelDiff(got, want))
					}
					hp, dp := hostOpt.groups[host.group[i]].params[i%2], devOpt.groups[dev.group[i]].params[i%2]
					if hp.expAvg != nil && (!equalBits(values(t, dp.expAvg), values(t, hp.expAvg)) ||
						!equalBits(values(t, dp.expAvgSq), values(t, hp.expAvgSq))) {
						t.Errorf("%s: moments differ between device and host scalars", name)
					}
					if hp.step != dp.step {
						t.Errorf("%s: step %d with device scalars, %d with host scalars", name, dp.step, hp.step)
					}
				}
				if hostOpt.StepCount() != devOpt.StepCount() {
					t.Errorf("StepCount %d with device scalars, %d with host scalars", devOpt.StepCount(), hostOpt.StepCount())
				}
			})
		}
	}
}

// Replayed advances exactly the counts the last Update advanced: the parameters with gradients, not "head.d";
// UpdateKernels (a captured body) advances none.
func TestReplayedCountsAsUpdate(t *testing.T) {
	lockThread(t)
	f := newFixture(t, gotch.Float)
	opt, err := New(Config{Kind: AdamW}, f.groups([2]float64{1e-3, 1e-3}, [2]float64{0.01, 0}))
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.UseDeviceScalars(); err != nil {
		t.Fatal(err)
	}
	backward(t, f.params, f.allGrads(1, gotch.Float))
	if err := opt.LoadScalars(); err != nil {
		t.Fatal(err)
	}
	if err := opt.Update(); err != nil {
		t.Fatal(err)
	}
	if err := opt.UpdateKernels(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := opt.LoadScalars(); err != nil {
			t.Fatal(err)
		}
		opt.Replayed()
	}
	want := map[string]int64{"enc.a": 3, "enc.b": 3, "head.c": 3, "head.d": 0}
	for _, g := range opt.groups {
		for _, p := range g.params {
			if p.step != want[p.name] {
				t.Errorf("%s: step %d after Update and two Replayed, want %d", p.name, p.step, want[p.name])
			}
		}
	}
	if opt.StepCount() != 3 {
		t.Errorf("StepCount %d, want 3", opt.StepCount())
	}
}

// A group whose parameters are at different steps cannot share one row of device scalars: Step says so and
// names the parameter, rather than update one of them with the other's bias correction.
func TestDeviceScalarsRefuseMixedSteps(t *testing.T) {
	lockThread(t)
	f := newFixture(t, gotch.Float)
	opt, err := New(Config{Kind: AdamW}, f.groups([2]float64{1e-3, 1e-3}, [2]float64{0.01, 0}))
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.UseDeviceScalars(); err != nil {
		t.Fatal(err)
	}
	var stepErr error
	for s := 1; s <= 3 && stepErr == nil; s++ { // "enc.b" joins at step 3, "enc.a" is at step 2 then
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		backward(t, f.params, f.grads(s, gotch.Float))
		stepErr = opt.Step()
	}
	if stepErr == nil || !strings.Contains(stepErr.Error(), "different steps") || !strings.Contains(stepErr.Error(), "enc.b") {
		t.Errorf("Step = %v, want an error about enc.b at a different step", stepErr)
	}
}

func maxRelDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		if a[i] != b[i] {
			d = max(d, math.Abs(a[i]-b[i])/math.Max(math.Abs(b[i]), 1e-30))
		}
	}
	return d
}
