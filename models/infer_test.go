package models

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/shared"
	"convrep/internal/torch"
	"convrep/tokenizers"
)

// inferFixtures are the fixtures' three tiny models, one per family.
var inferFixtures = []string{"tiny-bert", "tiny-roberta", "tiny-distilbert"}

// fixtureInput is the batch HuggingFace's outputs in the fixture were computed on.
func fixtureInput(t *testing.T, dir string, m *Model) Input {
	t.Helper()
	exp := readExpected(t, filepath.Join(dir, "expected.safetensors"))
	in := Input{IDs: exp.tensor(t, "input_ids"), Mask: exp.tensor(t, "attention_mask")}
	if m.Config.Arch == BERT {
		in.TypeIDs = exp.tensor(t, "token_type_ids")
	}
	return in
}

// hiddenStates runs an inference forward (no grad, no dropout) and copies every hidden state to Go.
func hiddenStates(t *testing.T, m *Model, in Input) [][]float64 {
	t.Helper()
	var states [][]float64
	err := torch.NoGrad(func() error {
		out, err := m.Forward(in, false)
		if err != nil {
			return err
		}
		defer out.Drop()
		for _, h := range out.Hidden {
			v, err := torch.Read(h)
			if err != nil {
				return err
			}
			states = append(states, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return states
}

func worstDiff(t *testing.T, a, b [][]float64) float64 {
	t.Helper()
	worst := 0.0
	for i := range a {
		if len(a[i]) != len(b[i]) {
			t.Fatalf("hidden state %d: %d values against %d", i, len(a[i]), len(b[i]))
		}
		for j := range a[i] {
			d := math.Abs(a[i][j] - b[i][j])
			if math.IsNaN(d) {
				return math.Inf(1)
			}
			worst = math.Max(worst, d)
		}
	}
	return worst
}

// TestOneDNNForwardEqualsLibtorchs holds the CPU inference forward on oneDNN's packed weights to libtorch's
// own (the forward before packing) within 1e-5 in every hidden state, for each family; and again after an
// in-place change to the weights, as an optimiser step makes, which the packed copy must follow.
func TestOneDNNForwardEqualsLibtorchs(t *testing.T) {
	if !torch.HasMKLDNN() {
		t.Skip("this libtorch has no oneDNN")
	}
	for _, name := range inferFixtures {
		t.Run(name, func(t *testing.T) {
			dir := shared.MustPath(t, "fixtures", name)
			m, err := Load(dir, LoadOptions{Device: gotch.CPU})
			if err != nil {
				t.Fatal(err)
			}
			in := fixtureInput(t, dir, m)
			compare := func(when string) {
				t.Helper()
				saved := m.packed
				m.packed = nil // libtorch's forward, as before packing
				want := hiddenStates(t, m, in)
				m.packed = saved
				var used []packedBlock
				torch.NoGrad(func() error { used = m.packedFor(false, in.IDs); return nil })
				if used == nil {
					t.Fatalf("%s: the inference forward does not run on the packed weights", when)
				}
				got := hiddenStates(t, m, in)
				if d := worstDiff(t, got, want); d > 1e-5 {
					t.Errorf("%s: oneDNN's forward differs from libtorch's by %.3g (tolerance 1e-5)", when, d)
				} else {
					t.Logf("%s: largest difference %.3g", when, d)
				}
			}
			if err := m.PackForCPUInference(false); err != nil {
				t.Fatal(err)
			}
			compare("packed at load")
			torch.NoGrad(func() error {
				m.layers[0].ffnIn.w.MustMulScalar_(ts.FloatScalar(1.5))
				m.layers[len(m.layers)-1].query.w.MustAddScalar_(ts.FloatScalar(0.01))
				return nil
			})
			compare("after an in-place change")
		})
	}
}

// TestTrainingForwardIgnoresPackedWeights: a forward with dropout or with autograd on never reads the packed
// copies.
func TestTrainingForwardIgnoresPackedWeights(t *testing.T) {
	if !torch.HasMKLDNN() {
		t.Skip("this libtorch has no oneDNN")
	}
	dir := shared.MustPath(t, "fixtures", "tiny-bert")
	m, err := Load(dir, LoadOptions{Device: gotch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.PackForCPUInference(false); err != nil {
		t.Fatal(err)
	}
	in := fixtureInput(t, dir, m)
	if torch.GradEnabled() && m.packedFor(false, in.IDs) != nil {
		t.Error("a forward with autograd on would run on the packed weights")
	}
	torch.NoGrad(func() error {
		if m.packedFor(true, in.IDs) != nil {
			t.Error("a training forward (dropout on) would run on the packed weights")
		}
		restore, err := torch.Autocast(gotch.CPU, gotch.BFloat16)
		if err != nil {
			t.Fatal(err)
		}
		defer restore()
		if m.packedFor(false, in.IDs) != nil {
			t.Error("a forward under autocast would run on the float32 packed weights")
		}
		return nil
	})
}

// TestBF16EmbeddingsNearFP32 holds an Embedder's bf16 vectors (libtorch's CPU autocast, the linears on weights
// packed in bfloat16 where the build calls oneDNN) to within cosine 0.9999 of its fp32 vectors, on the fixtures'
// three models and their tokenizers.
func TestBF16EmbeddingsNearFP32(t *testing.T) {
	if why, err := bf16On(gotch.CPU); err != nil {
		t.Skipf("bf16 does not run on this CPU: %v", err)
	} else {
		t.Log(why)
	}
	texts := []string{
		"i would like to book a table for two people tonight please",
		"hi",
		"what time does the train to cambridge leave on friday?",
		"the hotel should be in the north and have free parking, and i need it for three nights from sunday",
	}
	for _, name := range inferFixtures {
		t.Run(name, func(t *testing.T) {
			dir := shared.MustPath(t, "fixtures", name)
			m, err := Load(dir, LoadOptions{Device: gotch.CPU})
			if err != nil {
				t.Fatal(err)
			}
			tok, err := tokenizers.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			e := &Embedder{Model: m, Tokenizer: tok, Pooling: Mean}
			fp32, err := e.Embed(texts)
			if err != nil {
				t.Fatal(err)
			}
			e.Precision = BF16
			bf16, err := e.Embed(texts)
			if err != nil {
				t.Fatal(err)
			}
			if torch.MKLDNNDirect() && !m.packedBF16 {
				t.Error("bf16 on the CPU did not run on weights packed in bfloat16")
			}
			for i := range texts {
				c := cosine(fp32[i], bf16[i])
				if c < 0.9999 {
					t.Errorf("text %d: bf16's vector is at cosine %.6f of fp32's (at least 0.9999)", i, c)
				}
				if d := worstDiff(t, [][]float64{f64(fp32[i])}, [][]float64{f64(bf16[i])}); d == 0 {
					t.Errorf("text %d: bf16's vector equals fp32's: autocast did not run", i)
				}
			}
		})
	}
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// The CPU's bf16 instructions are read from /proc/cpuinfo's flags lines.
func TestBF16Flag(t *testing.T) {
	for _, tc := range []struct {
		info, want string
		ok         bool
	}{
		{"processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 avx512_vnni\n", "avx512_bf16", true},
		{"flags\t\t: fpu avx512f amx_tile amx_bf16\n", "amx_bf16", true},
		{"flags\t\t: fpu avx2 fma\n", "", false},
		{"model name\t: avx512_bf16 in a name is not a flag\nflags\t: fpu\n", "", false},
		{"", "", false},
	} {
		got, ok := bf16Flag(tc.info)
		if got != tc.want || ok != tc.ok {
			t.Errorf("bf16Flag(%q) = %q, %v; want %q, %v", tc.info, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParsePrecision(t *testing.T) {
	for _, s := range []string{"", "fp32"} {
		if p, err := ParsePrecision(s, gotch.CPU); p != FP32 || err != nil {
			t.Errorf("ParsePrecision(%q) = %q, %v; want fp32", s, p, err)
		}
	}
	if p, err := ParsePrecision("bf16", gotch.CudaIfAvailable()); gotch.CudaIfAvailable().IsCuda() && (p != BF16 || err != nil) {
		t.Errorf("bf16 on CUDA: %q, %v", p, err)
	}
	_, cpuErr := bf16On(gotch.CPU)
	p, err := ParsePrecision("bf16", gotch.CPU)
	if (err == nil) != (cpuErr == nil) || (err == nil && p != BF16) {
		t.Errorf("bf16 on the CPU: %q, %v; the CPU's flags say %v", p, err, cpuErr)
	}
	if _, err := ParsePrecision("fp16", gotch.CPU); err == nil {
		t.Error("fp16 was accepted")
	}
}
