package objectives_test

import (
	"math"
	"runtime"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/dialoguecse"
	"convrep/objectives/dse"
	"convrep/objectives/futuretod"
	"convrep/objectives/internal/testutil"
	"convrep/objectives/mgt"
	"convrep/objectives/mlm"
	"convrep/objectives/rcl"
	"convrep/objectives/simcse"
)

// Every objective under bf16 autocast (CPU's, which casts the same ops to bf16 as CUDA's for these models)
// returns a Float loss, within bf16's precision of its fp32 loss on the same batch and weights, and Float
// metrics. Before the losses were computed in fp32, MLM's and RCL's log-softmax and DSE's similarities ran
// in bf16 and their losses came back as BFloat16.
func TestLossesAreFP32UnderBF16Autocast(t *testing.T) {
	const x = objectives.IgnoreLabel
	labels := [][]int64{{x, 7, x, x, x}, {x, 11, x, x, x}, {x, x, 6, 8, x}, {x, 40, x, x, x}} // for Queries at width 5
	for _, tc := range []struct {
		name     string
		settings objectives.Settings
		mlmHead  bool
		batch    func(t *testing.T) any
	}{
		{"dse", nil, false, func(*testing.T) any {
			return dse.Batch{Query: testutil.Input(testutil.Queries, 6), Response: testutil.Input(testutil.Responses, 7)}
		}},
		{"simcse", objectives.Settings{"pooler": "avg"}, false, func(*testing.T) any {
			q := testutil.Input(testutil.Queries, 6)
			return dse.Batch{Query: q, Response: q}
		}},
		{"mlm", nil, true, func(t *testing.T) any {
			return mlm.Batch{Input: testutil.Input(testutil.Queries, 5),
				Labels: testutil.Labels(t, labels)}
		}},
		{"rcl", nil, true, func(t *testing.T) any {
			return rcl.Batch{Context: testutil.Input(testutil.Queries, 5), Response: testutil.Input(testutil.Responses, 6),
				Labels: testutil.Labels(t, labels)}
		}},
		{"futuretod", objectives.Settings{"top_k_layers": int64(2)}, true, func(t *testing.T) any {
			return futuretod.Batch{Context: testutil.Input(testutil.Queries, 5), Full: testutil.Input(testutil.Responses, 6),
				Labels: testutil.Labels(t, labels)}
		}},
		{"dialoguecse", objectives.Settings{"freeze_layers": int64(0)}, false, func(*testing.T) any {
			return dialoguecse.Batch{Responses: testutil.Input(testutil.Responses[:3], 6), Context: testutil.Input(testutil.Queries, 5),
				ContextOf: [][]int{{0, 1}, {2, 3}, {1}}, Negatives: [][]int{{1}, {0, 2}, {0, 1}}}
		}},
		{"mgt", objectives.Settings{"variant": "mgt", "segment": int64(2), "models": int64(3), "candidates": int64(2), "bucket_sample": int64(10)}, false,
			func(*testing.T) any {
				return mgt.Batch{Context: testutil.Input(testutil.Queries[:2], 6), Candidates: testutil.Input(testutil.Responses, 6), K: 2}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m *models.Model
			if tc.mlmHead {
				m = testutil.TinyMLMBERT(t, 21, false)
			} else {
				m = testutil.TinyBERT(t, 21)
			}
			o, err := testutil.New(tc.name, m, tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			batch := tc.batch(t)
			// Without dropout both runs see the same network; GradOn pinned the OS thread autocast lives on.
			loss := func() (float64, gotch.DType, map[string]float64) {
				l, mt, err := o.Loss(batch, false)
				if err != nil {
					t.Fatal(err)
				}
				defer l.MustDrop()
				return l.Float64Values()[0], l.DType(), testutil.Metrics(t, mt)
			}
			fp32, dt32, _ := loss()
			var bf16 float64
			var dt16 gotch.DType
			var metrics map[string]float64
			if err := torch.WithAutocast(gotch.CPU, gotch.BFloat16, func() error { bf16, dt16, metrics = loss(); return nil }); err != nil {
				t.Fatal(err)
			}
			diff := math.Abs(bf16 - fp32)
			t.Logf("%s: fp32 loss %.6f, under bf16 autocast %.6f (%v): |diff| %.3g, relative %.3g; metrics %v",
				tc.name, fp32, bf16, dt16, diff, diff/math.Abs(fp32), metrics)
			if dt32 != gotch.Float || dt16 != gotch.Float {
				t.Errorf("loss dtype %v in fp32, %v under bf16 autocast; want Float both", dt32, dt16)
			}
			// The encoder's matmuls round to bf16 (8 bits: 2^-9 relative per cast) through two layers; the
			// loss on top keeps fp32. 1% of the loss (about 3 bf16 steps) bounds that; a loss in bf16 would still pass this bound,
			// which is what the dtype check above and TestLossArithmeticIsFP32 are for.
			if math.IsNaN(bf16) || diff > 0.01*math.Max(1, math.Abs(fp32)) {
				t.Errorf("loss %.6f under bf16 autocast, %.6f in fp32: differ by %.3g", bf16, fp32, diff)
			}
			if diff == 0 {
				t.Error("the bf16 loss equals the fp32 one bit for bit: autocast did not act")
			}
		})
	}
}

// The losses' own arithmetic runs in fp32 under autocast: on fp32 inputs it gives the fp32 result (within
// float rounding), where a similarity matmul left to autocast would round each logit to bf16 (about 0.06
// at a logit of 20 for DSE's τ = 0.05).
func TestLossArithmeticIsFP32(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := torch.ManualSeed(3); err != nil {
		t.Fatal(err)
	}
	a := ts.MustRandn([]int64{8, 16}, gotch.Float, gotch.CPU)
	b := ts.MustRandn([]int64{8, 16}, gotch.Float, gotch.CPU)
	c := ts.MustRandn([]int64{4, 16}, gotch.Float, gotch.CPU)
	for _, tc := range []struct {
		name string
		loss func() (*ts.Tensor, error)
	}{
		{"dse.HardConLoss", func() (*ts.Tensor, error) {
			f1, f2 := objectives.Normalize(a), objectives.Normalize(b)
			defer torch.Drop(f1, f2)
			return dse.HardConLoss(f1, f2, nil, 0.05, dse.HardNeg)
		}},
		{"simcse.Loss", func() (*ts.Tensor, error) { return simcse.Loss(a, b, 0.05) }},
		{"rcl.Loss", func() (*ts.Tensor, error) { return rcl.Loss(a, b) }},
		{"mgt.DualEncoderLoss", func() (*ts.Tensor, error) {
			l, s, err := mgt.DualEncoderLoss(c, a, 2)
			torch.Drop(s)
			return l, err
		}},
		{"futuretod.DistillLoss", func() (*ts.Tensor, error) {
			return futuretod.DistillLoss([]*ts.Tensor{a}, []*ts.Tensor{b}, futuretod.SquaredL2)
		}},
	} {
		value := func() (float64, gotch.DType) {
			l, err := tc.loss()
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			defer l.MustDrop()
			return l.Float64Values()[0], l.DType()
		}
		want, _ := value()
		var got float64
		var dt gotch.DType
		if err := torch.WithAutocast(gotch.CPU, gotch.BFloat16, func() error { got, dt = value(); return nil }); err != nil {
			t.Fatal(err)
		}
		t.Logf("%-22s fp32 %.7f, under bf16 autocast %.7f (%v)", tc.name, want, got, dt)
		if dt != gotch.Float || math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("%s under bf16 autocast: %.7f (%v), fp32 %.7f", tc.name, got, dt, want)
		}
	}
}
