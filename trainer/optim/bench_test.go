package optim

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// bertShapes lists the parameter shapes of a BERT encoder with its embeddings and pooler.
func bertShapes(layers, hidden, ffn, vocab int64) [][]int64 {
	shapes := [][]int64{{vocab, hidden}, {512, hidden}, {2, hidden}, {hidden}, {hidden}}
	for range layers {
		for range 4 { // query, key, value, attention output
			shapes = append(shapes, []int64{hidden, hidden}, []int64{hidden})
		}
		shapes = append(shapes, []int64{hidden}, []int64{hidden}, // attention LayerNorm
			[]int64{ffn, hidden}, []int64{ffn}, []int64{hidden, ffn}, []int64{hidden},
			[]int64{hidden}, []int64{hidden}) // output LayerNorm
	}
	return append(shapes, []int64{hidden, hidden}, []int64{hidden}) // pooler
}

var benchModels = []struct {
	name   string
	shapes [][]int64
}{
	// 200 tiny tensors: the time is gotch's per-call overhead, not arithmetic.
	{"200x64", func() (s [][]int64) {
		for range 200 {
			s = append(s, []int64{64})
		}
		return s
	}()},
	{"bert-L4-H256", bertShapes(4, 256, 1024, 30522)},
	{"bert-base", bertShapes(12, 768, 3072, 30522)},
}

// benchParams makes random parameters in a VarStore, with gradients of ones.
func benchParams(b *testing.B, shapes [][]int64) (*nn.VarStore, []*ts.Tensor, []string, int64) {
	vs := nn.NewVarStore(gotch.CPU)
	var params []*ts.Tensor
	var names []string
	var floats int64
	err := guarded("bench params", func() error {
		var loss *ts.Tensor
		for i, s := range shapes {
			name := fmt.Sprintf("p%d", i)
			p := vs.Root().MustRandn(name, s, 0, 1)
			params = append(params, p)
			names = append(names, name)
			floats += numel(s)
			term := p.MustSum(gotch.Float, false)
			if loss == nil {
				loss = term
			} else {
				loss = loss.MustAdd(term, true)
				term.MustDrop()
			}
		}
		defer loss.MustDrop()
		return loss.Backward()
	})
	if err != nil {
		b.Fatal(err)
	}
	return vs, params, names, floats
}

// cpuTime is the process's user+system CPU time: on a shared, loaded machine it varies less than wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStep times one AdamW step (weight decay 0.01) over all parameters: this package's Step, and
// for comparison libtorch's C++ AdamW through gotch's nn.Optimizer, which has no per-call Go overhead.
func BenchmarkStep(b *testing.B) {
	lockThread(b)
	for _, m := range benchModels {
		for _, impl := range []string{"optim", "optim-per-tensor", "libtorch"} {
			b.Run(m.name+"/"+impl, func(b *testing.B) {
				vs, params, names, floats := benchParams(b, m.shapes)
				var step func() error
				if impl == "optim-per-tensor" { // the kernels the fused CPU loop replaced
					kernels = torch.PerTensor
					b.Cleanup(func() { kernels = torch.DeviceKernels })
				}
				if impl != "libtorch" {
					opt, err := New(Config{Kind: AdamW}, []Group{{Name: "all", Params: params, ParamNames: names, LR: 1e-4, WeightDecay: 0.01}})
					if err != nil {
						b.Fatal(err)
					}
					step = opt.Step
				} else {
					opt, err := nn.NewAdamWConfig(0.9, 0.999, 0.01).Build(vs, 1e-4)
					if err != nil {
						b.Fatal(err)
					}
					step = opt.Step
				}
				if err := step(); err != nil { // allocates the moments
					b.Fatal(err)
				}
				cpu := cpuTime(b)
				b.ResetTimer()
				for b.Loop() {
					if err := step(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(len(params)), "tensors")
				b.ReportMetric(float64(floats)/1e6, "Mfloats")
			})
		}
	}
}

// BenchmarkClipAndZero times ClipGradNorm followed by ZeroGrad, the other per-step calls.
func BenchmarkClipAndZero(b *testing.B) {
	lockThread(b)
	for _, m := range benchModels {
		b.Run(m.name, func(b *testing.B) {
			_, params, names, _ := benchParams(b, m.shapes)
			opt, err := New(Config{Kind: Adam}, []Group{{Params: params, ParamNames: names, LR: 1e-4}})
			if err != nil {
				b.Fatal(err)
			}
			cpu := cpuTime(b)
			for b.Loop() {
				if _, err := ClipGradNorm(params, 1); err != nil {
					b.Fatal(err)
				}
				if err := opt.ZeroGrad(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
