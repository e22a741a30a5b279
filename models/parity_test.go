package models

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/devtest"
	"convrep/internal/shared"
	"convrep/internal/torch"
	"convrep/safetensors"
)

// parityTol is the largest absolute difference from HuggingFace's outputs the encoders may have in fp32.
const parityTol = 1e-4

// Each case loads a fixture checkpoint in one of its formats and compares every output HuggingFace
// transformers 4.29 computed for the same batch (../shared/fixtures/README.md §4).
var parityCases = []struct {
	model, weights string
}{
	{"tiny-bert", "model.safetensors"},
	{"tiny-bert", "pytorch_model.bin"},
	{"tiny-bert", "pytorch_model.legacy.bin"},
	{"tiny-roberta", "model.safetensors"},
	{"tiny-roberta", "pytorch_model.bin"},
	{"tiny-distilbert", "model.safetensors"},
	{"tiny-distilbert", "pytorch_model.bin"},
}

// Each case runs as in training, with gradients recorded (the feed-forward's linear, then gelu); under no-grad,
// as evaluation runs (where the device's fused GEMM+GELU computes BERT's exact GELU, it runs); and on the CPU
// as an Embedder runs it, under no-grad with the layers' linears by oneDNN (PackForCPUInference).
func TestParityWithHuggingFace(t *testing.T) {
	for _, tc := range parityCases {
		for _, mode := range []string{"", "no-grad", "onednn"} {
			name := tc.model + "/" + tc.weights
			if mode != "" {
				name += "/" + mode
			}
			t.Run(name, func(t *testing.T) { parity(t, tc.model, tc.weights, mode) })
		}
	}
}

func parity(t *testing.T, model, weights, mode string) {
	dir := shared.MustPath(t, "fixtures", model)
	// The device the tests run on: the CPU, or the GPU under scripts/gpu_check.sh (internal/devtest).
	dev := devtest.Device(t)
	if mode == "onednn" && (dev.IsCuda() || !torch.HasMKLDNN()) {
		t.Skipf("oneDNN's linears run on the CPU of a libtorch with oneDNN; here the device is %v, oneDNN %v", dev, torch.HasMKLDNN())
	}
	m, err := Load(dir, LoadOptions{WeightsFile: filepath.Join(dir, weights), Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	if mode == "onednn" {
		if err := m.PackForCPUInference(false); err != nil {
			t.Fatal(err)
		}
	}
	exp := readExpected(t, filepath.Join(dir, "expected.safetensors"))
	onDev := func(name string) *ts.Tensor { return exp.tensor(t, name).MustTo(dev, true) }
	in := Input{IDs: onDev("input_ids"), Mask: onDev("attention_mask")}
	if m.Config.Arch == BERT {
		in.TypeIDs = onDev("token_type_ids")
	}
	var out *Output
	forward := func() (err error) { out, err = m.Forward(in, false); return err }
	if mode != "" {
		err = torch.NoGrad(forward)
	} else {
		err = forward()
	}
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	check := func(name string, got *ts.Tensor) {
		t.Helper()
		d := exp.maxDiff(t, name, got)
		worst = math.Max(worst, d)
		if d > parityTol {
			t.Errorf("%s differs from HuggingFace by %.3g (tolerance %g)", name, d, parityTol)
		}
	}
	for i, h := range out.Hidden {
		check("hidden_states."+string(rune('0'+i)), h)
	}
	check("last_hidden_state", out.Last)
	if m.Config.Arch == BERT {
		check("pooler_output", out.Pooled)
		nsp, err := m.NSPLogits(out.Pooled)
		if err != nil {
			t.Fatal(err)
		}
		check("nsp_logits", nsp)
	}
	mean, err := Pool(Mean, out.Last, in.Mask)
	if err != nil {
		t.Fatal(err)
	}
	check("mean_pooled", mean)

	logits, err := m.MLMLogits(out.Last)
	if err != nil {
		t.Fatal(err)
	}
	pos := onDev("mlm_logits_positions")
	check("mlm_logits_at_positions", logits.MustIndexSelect(1, pos, false))
	check("mlm_logsumexp", logits.MustTotype(gotch.Double, false).MustLogsumexp([]int64{-1}, false, true))
	argmax := logits.MustArgmax([]int64{-1}, false, false).MustTo(gotch.CPU, true).Int64Values()
	want := exp.tensor(t, "mlm_argmax").Int64Values()
	for i := range want {
		if argmax[i] != want[i] {
			t.Errorf("MLM argmax at flat position %d: got %d, HuggingFace %d", i, argmax[i], want[i])
		}
	}
	t.Logf("largest difference from HuggingFace: %.3g", worst)
}

type expected map[string]safetensors.Tensor

func readExpected(t *testing.T, path string) expected {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := expected{}
	for _, x := range f.Tensors {
		e[x.Name] = x
	}
	return e
}

func (e expected) tensor(t *testing.T, name string) *ts.Tensor {
	t.Helper()
	x, ok := e[name]
	if !ok {
		t.Fatalf("expected.safetensors has no %s", name)
	}
	y, err := torch.FromSafetensor(x)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// maxDiff is the largest absolute difference between got and the stored tensor, whose shapes must agree.
func (e expected) maxDiff(t *testing.T, name string, got *ts.Tensor) float64 {
	t.Helper()
	want := e.tensor(t, name)
	if !slices.Equal(want.MustSize(), got.MustSize()) {
		t.Fatalf("%s: shape %v, HuggingFace %v", name, got.MustSize(), want.MustSize())
	}
	g, err := torch.Read(got) // from any device
	if err != nil {
		t.Fatal(err)
	}
	w := want.Float64Values()
	worst := 0.0
	for i := range w {
		d := math.Abs(g[i] - w[i])
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		worst = math.Max(worst, d)
	}
	return worst
}
