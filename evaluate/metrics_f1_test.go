package evaluate

import (
	"math"
	"testing"
)

func TestMultiLabelF1(t *testing.T) {
	T, F := true, false
	cases := []struct {
		name       string
		pred, gold [][]bool
		micro      float64
		macro      float64
	}{
		{"perfect", [][]bool{{T, F}, {F, T}}, [][]bool{{T, F}, {F, T}}, 1, 1},
		// label 0: tp 1, fp 1, fn 0 -> 2/3; label 1: tp 0, fp 0, fn 1 -> 0; micro: tp 1, fp 1, fn 1 -> 2/4.
		{"by hand", [][]bool{{T, F}, {T, F}}, [][]bool{{T, F}, {F, T}}, 0.5, 1.0 / 3},
		// label 2 never occurs in gold nor pred: left out of the macro average.
		{"empty class", [][]bool{{T, F, F}, {F, T, F}}, [][]bool{{T, F, F}, {T, T, F}}, 0.8, (2.0/3 + 1) / 2},
		{"nothing predicted", [][]bool{{F}, {F}}, [][]bool{{T}, {F}}, 0, 0},
		{"no positives anywhere", [][]bool{{F}}, [][]bool{{F}}, 0, 0},
	}
	for _, c := range cases {
		got, err := MultiLabelF1(c.pred, c.gold)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if math.Abs(got.Micro-c.micro) > 1e-12 || math.Abs(got.Macro-c.macro) > 1e-12 {
			t.Errorf("%s: got %+v, want micro %v macro %v", c.name, got, c.micro, c.macro)
		}
	}
	if _, err := MultiLabelF1([][]bool{{T}}, [][]bool{{T, F}}); err == nil {
		t.Error("ragged rows accepted")
	}
	if _, err := MultiLabelF1(nil, nil); err == nil {
		t.Error("no rows accepted")
	}
}
