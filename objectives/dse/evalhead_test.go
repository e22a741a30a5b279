package dse

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/sugarme/gotch/ts"

	"convrep/checkpoint"
	"convrep/evaluate"
	"convrep/internal/torch"
	"convrep/objectives/internal/testutil"
	"convrep/safetensors"
)

type rows [][]float32

func (r rows) Embed(texts []string) ([][]float32, error) { return r[:len(texts)], nil }

// evaluate.Head, which evaluates through the head a checkpoint holds, computes what the objective's own head
// computes: the head's weights written as a checkpoint writes them, read back by evaluate.ReadHead.
func TestEvaluateHeadIsTheObjectivesHead(t *testing.T) {
	m := testutil.TinyBERT(t, 4)
	h, err := newContrastHead(m, dseHead, 5, HeadInitUniform)
	if err != nil {
		t.Fatal(err)
	}
	d := m.Config.HiddenSize
	var tensors []safetensors.Tensor
	for _, name := range []string{dseHead + ".0.weight", dseHead + ".2.weight"} {
		p, err := m.VS.Root().Get(name)
		if err != nil {
			t.Fatal(err)
		}
		st, err := torch.ToSafetensor(checkpoint.ParamPrefix+name, p)
		if err != nil {
			t.Fatal(err)
		}
		tensors = append(tensors, st)
	}
	path := filepath.Join(t.TempDir(), "step-000000001.safetensors")
	if err := safetensors.WriteFile(path, nil, tensors); err != nil {
		t.Fatal(err)
	}
	in := make([]float32, 3*d)
	for i := range in {
		in[i] = float32(math.Sin(float64(i)))
	}
	x := ts.MustOfSlice(in).MustView([]int64{3, d}, true)
	want := h.forward(x).Float64Values(true)
	x.MustDrop()
	eh, err := evaluate.ReadHead(path, dseHead, rows{in[:d], in[d : 2*d], in[2*d:]})
	if err != nil {
		t.Fatal(err)
	}
	got, err := eh.Embed([]string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	for n := range 3 {
		for j := range 5 {
			if diff := math.Abs(float64(got[n][j]) - want[n*5+j]); diff > 1e-5 {
				t.Fatalf("row %d output %d: evaluate.Head %v, the objective's head %v", n, j, got[n][j], want[n*5+j])
			}
		}
	}
}
