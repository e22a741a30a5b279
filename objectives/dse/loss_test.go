package dse

import (
	"math"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/shared"
	"convrep/objectives/internal/testutil"
	"convrep/objectives/tensors"
	"convrep/safetensors"
)

// dseFixture is ../shared/fixtures/dse_loss/expected.safetensors: HardConLoss of the DSE authors' code on
// f1, f2 [8,16], with its gradients (fixtures README §6).
func dseFixture(t *testing.T) *safetensors.File {
	t.Helper()
	f, err := safetensors.ReadFile(shared.MustPath(t, "fixtures", "dse_loss", "expected.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestHardConLossMatchesDSE(t *testing.T) {
	f := dseFixture(t)
	const tol = 1e-5
	for _, tc := range []struct {
		key   string
		mode  Mode
		mixed bool
	}{
		{"HardNeg", HardNeg, false},
		{"Orig", Orig, false},
		{"HardNeg.mixed", HardNeg, true},
		{"Orig.mixed", Orig, true},
	} {
		for _, prec := range []struct {
			suffix string
			dtype  gotch.DType
		}{{"", gotch.Float}, {".f64", gotch.Double}} {
			key := tc.key + prec.suffix
			simi := "pairsimi"
			if tc.mixed {
				simi = "pairsimi_mixed"
			}
			pairsimi := ts.MustOfSlice(testutil.Values(t, f, simi)).MustTotype(gotch.Int64, true)
			// The normalised features as leaves, and the raw ones with F.normalize inside the graph. The
			// float64 case normalises f*_raw in float64, as the fixture did.
			for _, raw := range []bool{false, true} {
				name := key
				in1, in2, suffix := "f1", "f2", ""
				if raw || prec.dtype == gotch.Double {
					in1, in2 = "f1_raw", "f2_raw"
				}
				if raw {
					suffix, name = "_raw", key+"/raw"
				}
				t.Run(name, func(t *testing.T) {
					testutil.GradOn(t)
					x1, x2 := testutil.Leaf(t, f, in1, prec.dtype), testutil.Leaf(t, f, in2, prec.dtype)
					g1, g2 := x1, x2
					if in1 == "f1_raw" {
						f1, f2 := tensors.Normalize(x1), tensors.Normalize(x2)
						if !raw { // the normalised features themselves are the leaves
							f1, f2 = f1.MustDetach(true), f2.MustDetach(true)
							f1.MustRequiresGrad_(true)
							f2.MustRequiresGrad_(true)
							g1, g2 = f1, f2
						}
						x1, x2 = f1, f2
					}
					loss, err := HardConLoss(x1, x2, pairsimi, 0.05, tc.mode)
					if err != nil {
						t.Fatal(err)
					}
					loss.MustBackward()
					for _, c := range []struct {
						name string
						got  []float64
					}{
						{"loss" + suffix + "." + key, loss.Float64Values()},
						{"grad_f1" + suffix + "." + key, g1.MustGrad(false).Float64Values()},
						{"grad_f2" + suffix + "." + key, g2.MustGrad(false).Float64Values()},
					} {
						d := testutil.MaxDiff(c.got, testutil.Values(t, f, c.name))
						t.Logf("%-28s max |diff| %.3g", c.name, d)
						if d > tol {
							t.Errorf("%s: max |diff| %g > %g", c.name, d, tol)
						}
					}
				})
			}
		}
	}
}

// With a small temperature exp(s/τ) overflows float32 (the reference code gives inf/nan); the log-space
// form stays finite and agrees with float64.
func TestHardConLossSmallTemperature(t *testing.T) {
	f := dseFixture(t)
	for _, mode := range []Mode{HardNeg, Orig} {
		var got []float64
		for _, dtype := range []gotch.DType{gotch.Float, gotch.Double} {
			f1 := tensors.Normalize(testutil.Leaf(t, f, "f1_raw", dtype))
			f2 := tensors.Normalize(testutil.Leaf(t, f, "f2_raw", dtype))
			loss, err := HardConLoss(f1, f2, nil, 1e-3, mode)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, loss.Float64Values(true)[0])
		}
		if math.IsNaN(got[0]) || math.IsInf(got[0], 0) || math.Abs(got[0]-got[1]) > 1e-4*math.Abs(got[1]) {
			t.Errorf("%s at τ=0.001: float32 %v, float64 %v", mode, got[0], got[1])
		}
	}
}

// Pairs marked 0 add no loss: with none marked, the loss is 0.
func TestHardConLossNoPositivePair(t *testing.T) {
	f := dseFixture(t)
	f1, f2 := testutil.Leaf(t, f, "f1", gotch.Float), testutil.Leaf(t, f, "f2", gotch.Float)
	loss, err := HardConLoss(f1, f2, ts.MustZeros([]int64{8}, gotch.Int64, gotch.CPU), 0.05, HardNeg)
	if err != nil {
		t.Fatal(err)
	}
	if v := loss.Float64Values(true)[0]; v != 0 {
		t.Fatalf("loss %v with no positive pair, want 0", v)
	}
}

func TestHardConLossRejects(t *testing.T) {
	x := func(rows, cols int64) *ts.Tensor { return ts.MustOnes([]int64{rows, cols}, gotch.Float, gotch.CPU) }
	for _, tc := range []struct {
		name     string
		f1, f2   *ts.Tensor
		pairsimi *ts.Tensor
		tau      float64
		mode     Mode
		want     string
	}{
		{"zero temperature", x(4, 3), x(4, 3), nil, 0, HardNeg, "temperature"},
		{"NaN temperature", x(4, 3), x(4, 3), nil, math.NaN(), HardNeg, "temperature"},
		{"infinite temperature", x(4, 3), x(4, 3), nil, math.Inf(1), Orig, "temperature"},
		{"unknown mode", x(4, 3), x(4, 3), nil, 0.05, "supcon", "supcon"},
		{"shapes differ", x(4, 3), x(4, 2), nil, 0.05, HardNeg, "[4 3] and [4 2]"},
		{"one pair", x(1, 3), x(1, 3), nil, 0.05, HardNeg, "no negatives"},
		{"missing view", x(4, 3), nil, nil, 0.05, HardNeg, "required"},
		{"integer features", ts.MustOnes([]int64{4, 3}, gotch.Int64, gotch.CPU), ts.MustOnes([]int64{4, 3}, gotch.Int64, gotch.CPU), nil, 0.05, HardNeg, "floating"},
		{"pairsimi length", x(4, 3), x(4, 3), ts.MustOnes([]int64{3}, gotch.Int64, gotch.CPU), 0.05, HardNeg, "pairsimi must be [4]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := HardConLoss(tc.f1, tc.f2, tc.pairsimi, tc.tau, tc.mode)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"HardNeg": HardNeg, "hardneg": HardNeg, " Orig ": Orig, "orig": Orig, "": "", "hard": ""} {
		got, err := ParseMode(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
