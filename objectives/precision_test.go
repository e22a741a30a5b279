package objectives_test

import (
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
	"convrep/objectives/inputs"
	"convrep/objectives/internal/testutil"
	"convrep/objectives/mlm"
	"convrep/objectives/rcl"
	"convrep/objectives/simcse"
	"convrep/objectives/tensors"
)

// Every objective under bf16 autocast (CPU's, which casts the same ops to bf16 as CUDA's for these models)
// returns a Float loss, within bf16's precision of its fp32 loss on the same batch and weights, and Float
// metrics. Before the losses were computed in fp32, MLM's and RCL's log-softmax and DSE's similarities ran
// in bf16 and their losses came back as BFloat16.
func TestLossesAreFP32UnderBF16Autocast(t *testing.T) {
	const x = inputs.IgnoreLabel
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
			testutil.CheckLossUnderAutocast(t, tc.name, o, tc.batch(t))
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
	for _, tc := range []struct {
		name string
		loss func() (*ts.Tensor, error)
	}{
		{"dse.HardConLoss", func() (*ts.Tensor, error) {
			f1, f2 := tensors.Normalize(a), tensors.Normalize(b)
			defer torch.Drop(f1, f2)
			return dse.HardConLoss(f1, f2, nil, 0.05, dse.HardNeg)
		}},
		{"simcse.Loss", func() (*ts.Tensor, error) { return simcse.Loss(a, b, 0.05) }},
		{"rcl.Loss", func() (*ts.Tensor, error) { return rcl.Loss(a, b) }},
		{"futuretod.DistillLoss", func() (*ts.Tensor, error) {
			return futuretod.DistillLoss([]*ts.Tensor{a}, []*ts.Tensor{b}, futuretod.SquaredL2)
		}},
	} {
		testutil.CheckArithmeticFP32(t, tc.name, tc.loss)
	}
}
