package models

import (
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/shared"
)

func TestForwardRejectsBadInput(t *testing.T) {
	m, err := Load(shared.MustPath(t, "fixtures", "tiny-roberta"), LoadOptions{Device: gotch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(v []int64, rows, cols int64) *ts.Tensor {
		return ts.MustOfSlice(v).MustView([]int64{rows, cols}, true)
	}
	ones := func(rows, cols int64) *ts.Tensor { return ts.MustOnes([]int64{rows, cols}, gotch.Int64, gotch.CPU) }
	long := make([]int64, 65)
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{"id beyond vocabulary", Input{IDs: ids([]int64{0, 50265, 2}, 1, 3), Mask: ones(1, 3)}, "token id 50265 outside the vocabulary of 50265"},
		{"negative id", Input{IDs: ids([]int64{0, -1, 2}, 1, 3), Mask: ones(1, 3)}, "token id -1"},
		{"too long", Input{IDs: ids(long, 1, 65), Mask: ones(1, 65)}, "sequence length 65 exceeds the model's 64 positions"},
		{"mask shape", Input{IDs: ids([]int64{0, 5, 2}, 1, 3), Mask: ones(1, 2)}, "attention mask has shape [1 2]"},
		{"no mask", Input{IDs: ids([]int64{0, 5, 2}, 1, 3)}, "attention mask are required"},
		{"float ids", Input{IDs: ts.MustOnes([]int64{1, 3}, gotch.Float, gotch.CPU), Mask: ones(1, 3)}, "must be int64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Forward(tc.in, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// A libtorch error inside the forward pass comes back as an error, not a process exit.
func TestForwardLibtorchErrorIsAnError(t *testing.T) {
	m, err := Load(shared.MustPath(t, "fixtures", "tiny-bert"), LoadOptions{Device: gotch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	mask := ts.MustOnes([]int64{1, 3}, gotch.Int64, gotch.CPU)
	hidden := ts.MustOnes([]int64{1, 3, 7}, gotch.Float, gotch.CPU) // hidden size 7, the head wants 32
	if _, err := m.MLMLogits(hidden); err == nil || !strings.Contains(err.Error(), "libtorch") {
		t.Fatalf("MLM head on a wrong-sized input: got %v", err)
	}
	_ = mask
}
