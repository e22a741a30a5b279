package claims

import (
	"encoding/json"
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		means    []float64
		splitStd float64
		want     Summary
	}{
		// mean 0.4; squares 0.04 + 0 + 0.04 over n−1 = 2: std √0.04 = 0.2.
		{"three seeds", []float64{0.2, 0.4, 0.6}, 0.05, Summary{Mean: 0.4, Std: 0.2, N: 3}},
		// mean 0.2; squares 0.01 + 0.01 over 1: std √0.02.
		{"two seeds", []float64{0.1, 0.3}, 0, Summary{Mean: 0.2, Std: math.Sqrt(0.02), N: 2}},
		{"equal seeds", []float64{0.5, 0.5}, 0.1, Summary{Mean: 0.5, Std: 0, N: 2}},
		{"one seed: the splits' spread", []float64{0.1667}, 0.0097, Summary{Mean: 0.1667, Std: 0.0097, N: 1, SplitSpread: true}},
		{"no seed", nil, 0.1, Summary{}},
	} {
		got := Summarize(tc.means, tc.splitStd)
		if got.N != tc.want.N || got.SplitSpread != tc.want.SplitSpread || !near(got.Mean, tc.want.Mean) || !near(got.Std, tc.want.Std) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestCohenD(t *testing.T) {
	for _, tc := range []struct {
		name          string
		better, worse Summary
		want          float64
	}{
		// difference 0.2 over √((0.04 + 0.04)/2) = 0.2.
		{"equal spreads", Summary{Mean: 0.4, Std: 0.2}, Summary{Mean: 0.2, Std: 0.2}, 1},
		// difference 0.1 over √((0.09 + 0.01)/2) = √0.05.
		{"unequal spreads", Summary{Mean: 0.6, Std: 0.3}, Summary{Mean: 0.5, Std: 0.1}, 0.1 / math.Sqrt(0.05)},
		{"worse is better", Summary{Mean: 0.2, Std: 0.2}, Summary{Mean: 0.4, Std: 0.2}, -1},
		{"no spread, better", Summary{Mean: 0.5}, Summary{Mean: 0.4}, math.Inf(1)},
		{"no spread, worse", Summary{Mean: 0.4}, Summary{Mean: 0.5}, math.Inf(-1)},
		{"no spread, equal", Summary{Mean: 0.4}, Summary{Mean: 0.4}, 0},
	} {
		got := CohenD(tc.better, tc.worse)
		if !(got == tc.want || near(got, tc.want)) {
			t.Errorf("%s: d = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEffectJSON(t *testing.T) {
	for _, tc := range []struct {
		d    float64
		json string
	}{
		{1.25, "1.25"},
		{-0.5, "-0.5"},
		{math.Inf(1), `"+Inf"`},
		{math.Inf(-1), `"-Inf"`},
	} {
		b, err := json.Marshal(Effect(tc.d))
		if err != nil || string(b) != tc.json {
			t.Errorf("%v: %s (%v), want %s", tc.d, b, err, tc.json)
		}
		var back Effect
		if err := json.Unmarshal(b, &back); err != nil || float64(back) != tc.d {
			t.Errorf("%s: read back %v (%v), want %v", b, back, err, tc.d)
		}
	}
	var e Effect
	if err := json.Unmarshal([]byte(`"big"`), &e); err == nil {
		t.Error(`"big" read as an effect size`)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
