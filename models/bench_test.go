package models

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// benchShapes are the encoder sizes benchmarked: the small BERT that trains on CPU here, and BERT-base.
var benchShapes = []struct {
	name                       string
	layers, hidden, heads, ffn int64
	batch, seq                 int64
}{
	{"L4-H256-B64-T32", 4, 256, 4, 1024, 64, 32},
	{"L12-H768-B8-T128", 12, 768, 12, 3072, 8, 128},
}

func benchModel(tb testing.TB, vocab, layers, hidden, heads, ffn int64) *Model {
	tb.Helper()
	if err := torch.ManualSeed(1); err != nil {
		tb.Fatal(err)
	}
	c := &Config{Arch: BERT, VocabSize: vocab, HiddenSize: hidden, NumLayers: layers, NumHeads: heads,
		IntermediateSize: ffn, HiddenAct: "gelu", HiddenDropout: 0.1, AttentionDropout: 0.1, MaxPositions: 512,
		TypeVocabSize: 2, LayerNormEps: 1e-12, InitializerRange: 0.02, TieWordEmbeddings: true}
	m, err := New(c, Heads{}, gotch.CPU)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func randomInput(batch, seq int64) Input {
	ids := ts.MustRandintLow(1000, 2000, []int64{batch, seq}, gotch.Int64, gotch.CPU)
	return Input{IDs: ids, Mask: ts.MustOnes([]int64{batch, seq}, gotch.Int64, gotch.CPU)}
}

// BenchmarkEncoderForward times inference (no grad, dropout off) and reports tokens per second.
func BenchmarkEncoderForward(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(s.name, func(b *testing.B) {
			m := benchModel(b, 30522, s.layers, s.hidden, s.heads, s.ffn)
			in := randomInput(s.batch, s.seq)
			forward := func() error {
				return torch.NoGrad(func() error {
					out, err := m.Forward(in, false)
					if err == nil {
						out.Drop()
					}
					return err
				})
			}
			count := countOps(b, forward) // also the warm-up pass
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := forward(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.batch*s.seq)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(count.Calls), "calls/pass")
			b.ReportMetric(float64(count.Ops), "aten-ops/pass")
		})
	}
}

// BenchmarkEncoderTrainStep times forward, backward and an Adam step with dropout on.
func BenchmarkEncoderTrainStep(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(s.name, func(b *testing.B) {
			m := benchModel(b, 30522, s.layers, s.hidden, s.heads, s.ffn)
			opt, err := nn.DefaultAdamConfig().Build(m.VS, 1e-4)
			if err != nil {
				b.Fatal(err)
			}
			in := randomInput(s.batch, s.seq)
			count := countOps(b, func() error { return trainStep(m, opt, in) }) // also the warm-up step
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := trainStep(m, opt, in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.batch*s.seq)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(count.Calls), "calls/step")
			b.ReportMetric(float64(count.BackwardNodes), "autograd-nodes/step")
			b.ReportMetric(float64(count.Ops), "aten-ops/step")
		})
	}
}

// countOps runs step once and returns the libtorch work it did, all phases together (torch.Counting).
func countOps(tb testing.TB, step func() error) torch.Count {
	tb.Helper()
	stop, err := torch.Counting()
	if err != nil {
		tb.Fatal(err)
	}
	err = step()
	counts, stopErr := stop()
	if err != nil {
		tb.Fatal(err)
	}
	if stopErr != nil {
		tb.Fatal(stopErr)
	}
	return counts.Total()
}

func trainStep(m *Model, opt *nn.Optimizer, in Input) error {
	return torch.Catch("train step", func() error {
		out, err := m.Forward(in, true)
		if err != nil {
			return err
		}
		loss := out.Last.MustSquare(false).MustMean(gotch.Float, true)
		defer loss.MustDrop()
		defer out.Drop()
		if err := opt.ZeroGrad(); err != nil {
			return err
		}
		if err := loss.Backward(); err != nil {
			return err
		}
		return opt.Step()
	})
}

// Resident memory and the number of live tensor handles must stay flat over two thousand training steps, each
// in a torch.Scope as the trainer runs them. gotch leaked a tensor handle per in-place op and the output buffer
// of every op before cmd/setup's patches; with its per-handle 100 KB allocation gone the garbage collector runs
// rarely, so only explicit drops (and the scope) keep libtorch's memory from growing.
func TestTrainingMemoryIsFlat(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m := benchModel(t, 2000, 2, 128, 4, 512)
	opt, err := nn.DefaultAdamConfig().Build(m.VS, 1e-4)
	if err != nil {
		t.Fatal(err)
	}
	in := randomInput(16, 32)
	const steps, warm = 2000, 200
	var warmRSS, warmHandles int64
	var ms runtime.MemStats
	for i := 1; i <= steps; i++ {
		s := torch.NewScope()
		err := trainStep(m, opt, in)
		if ferr := s.Free(); err == nil {
			err = ferr
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%warm == 0 {
			rss := residentBytes(t)
			runtime.ReadMemStats(&ms)
			t.Logf("step %d: resident %.1f MiB, Go heap %.1f MiB, %d GCs, %d live tensor handles",
				i, float64(rss)/(1<<20), float64(ms.HeapAlloc)/(1<<20), ms.NumGC, ts.LiveTensors())
			if i == warm {
				warmRSS, warmHandles = rss, ts.LiveTensors()
			}
		}
	}
	// A per-step leak of even one activation (16·32·128 floats = 256 KiB) would add 450 MiB over 1,800 steps.
	if growth := residentBytes(t) - warmRSS; growth > 32<<20 {
		t.Errorf("resident memory grew by %.1f MiB between step %d and step %d", float64(growth)/(1<<20), warm, steps)
	}
	if n := ts.LiveTensors() - warmHandles; n > 0 {
		t.Errorf("%d more live tensor handles after step %d than after step %d", n, steps, warm)
	}
}

func residentBytes(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(fmt.Errorf("statm: %w", err))
	}
	return pages * int64(os.Getpagesize())
}
