package evaluate

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestAccuracy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pred, gold []int
		want       float64
		err        bool
	}{
		{"all right", []int{0, 1, 2}, []int{0, 1, 2}, 1, false},
		{"one of four", []int{0, 0, 0, 0}, []int{0, 1, 2, 3}, 0.25, false},
		{"none", []int{1}, []int{0}, 0, false},
		{"lengths differ", []int{1}, []int{0, 1}, 0, true},
		{"empty", nil, nil, 0, true},
	} {
		got, err := Accuracy(tc.pred, tc.gold)
		if (err != nil) != tc.err || !near(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestAssignPrototypes(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name     string
		sims     [][]float64
		wantPred []int
		wantBest []float64
		err      bool
	}{
		{"argmax", [][]float64{{0.1, 0.9, 0.3}, {0.5, -1, 0.2}}, []int{1, 0}, []float64{0.9, 0.5}, false},
		{"tie goes to lowest index", [][]float64{{0.2, 0.7, 0.7}, {0.4, 0.4}}, []int{1, 0}, []float64{0.7, 0.4}, false},
		{"empty class (NaN) is skipped", [][]float64{{nan, 0.1, 0.05}, {0.3, nan}}, []int{1, 0}, []float64{0.1, 0.3}, false},
		{"negative similarities", [][]float64{{-0.5, -0.2, -0.9}}, []int{1}, []float64{-0.2}, false},
		{"no prototype at all", [][]float64{{0.1}, {nan, nan}}, nil, nil, true},
		{"empty row", [][]float64{{}}, nil, nil, true},
	} {
		pred, best, err := AssignPrototypes(tc.sims)
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v, want error %v", tc.name, err, tc.err)
			continue
		}
		for i := range tc.wantPred {
			if pred[i] != tc.wantPred[i] || !near(best[i], tc.wantBest[i]) {
				t.Errorf("%s: query %d got (%d, %v), want (%d, %v)", tc.name, i, pred[i], best[i], tc.wantPred[i], tc.wantBest[i])
			}
		}
	}
}

func TestMeanStd(t *testing.T) {
	for _, tc := range []struct {
		xs        []float64
		mean, std float64
	}{
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, 2}, // population std 2 (the sample std would be 2.138)
		{[]float64{1}, 1, 0},
		{[]float64{0.5, 0.7}, 0.6, 0.1},
	} {
		m, s := MeanStd(tc.xs)
		if !near(m, tc.mean) || !near(s, tc.std) {
			t.Errorf("MeanStd(%v) = %v, %v; want %v, %v", tc.xs, m, s, tc.mean, tc.std)
		}
	}
	if m, s := MeanStd(nil); !math.IsNaN(m) || !math.IsNaN(s) {
		t.Errorf("MeanStd(nil) = %v, %v; want NaN, NaN", m, s)
	}
}

func TestOOSMetrics(t *testing.T) {
	// Six queries: four in-scope (intents 0, 1), two out-of-scope.
	gold := []int{0, 1, 0, 1, OOS, OOS}
	pred := []int{0, 1, 1, 1, 0, 1}
	best := []float64{0.9, 0.3, 0.8, 0.6, 0.2, 0.7}
	for _, tc := range []struct {
		name      string
		threshold float64
		want      OOSResult
	}{
		// 0.5: flagged are queries 1 (0.3) and 4 (0.2).
		// Correct 151-way: q0, q3 (in), q4 (oos) = 3/6. In: q0, q3 = 2/4. Binary: q0 q2 q3 kept in, q4 flagged = 4/6.
		// OOS recall: q4 of {q4, q5} = 1/2.
		{"0.5", 0.5, OOSResult{Accuracy: 3.0 / 6, InAccuracy: 2.0 / 4, OOSAccuracy: 4.0 / 6, OOSRecall: 0.5}},
		// 0: nothing flagged: in-scope correct q0 q1 q3 = 3/4, accuracy 3/6, binary 4/6, recall 0.
		{"0", 0, OOSResult{Accuracy: 3.0 / 6, InAccuracy: 3.0 / 4, OOSAccuracy: 4.0 / 6, OOSRecall: 0}},
		// 1: everything flagged: accuracy 2/6, in 0, binary 2/6, recall 1.
		{"1", 1, OOSResult{Accuracy: 2.0 / 6, InAccuracy: 0, OOSAccuracy: 2.0 / 6, OOSRecall: 1}},
		// 0.7 equals q5's best: not below it, so q5 is not flagged (strictly below flags); q1 q3 q4 are.
		// Correct: q0, q4 = 2/6. In: q0 = 1/4. Binary: q0 q2 kept, q4 flagged = 3/6. Recall 1/2.
		{"0.7 boundary", 0.7, OOSResult{Accuracy: 2.0 / 6, InAccuracy: 1.0 / 4, OOSAccuracy: 3.0 / 6, OOSRecall: 0.5}},
	} {
		got, err := OOSMetrics(pred, best, gold, tc.threshold)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !near(got.Accuracy, tc.want.Accuracy) || !near(got.InAccuracy, tc.want.InAccuracy) ||
			!near(got.OOSAccuracy, tc.want.OOSAccuracy) || !near(got.OOSRecall, tc.want.OOSRecall) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if _, err := OOSMetrics([]int{0}, []float64{1}, []int{0}, 0.5); err == nil {
		t.Error("no out-of-scope query: want an error")
	}
	if _, err := OOSMetrics([]int{0}, []float64{1, 2}, []int{0, OOS}, 0.5); err == nil {
		t.Error("lengths differ: want an error")
	}
}

func TestOOSThresholds(t *testing.T) {
	m, md, err := OOSThresholds([]float64{0.2, 0.4, 0.6, 0.8})
	// mean 0.5; population variance (0.09+0.01+0.01+0.09)/4 = 0.05.
	if err != nil || !near(m, 0.5) || !near(md, 0.5-math.Sqrt(0.05)) {
		t.Errorf("got %v, %v, %v; want 0.5, %v", m, md, err, 0.5-math.Sqrt(0.05))
	}
	if _, _, err := OOSThresholds(nil); err == nil {
		t.Error("no queries: want an error")
	}
}

func TestRank(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name   string
		scores []float64
		truth  int
		want   int
		err    bool
	}{
		{"best", []float64{0.9, 0.1, 0.5}, 0, 1, false},
		{"third", []float64{0.2, 0.9, 0.5, 0.1}, 0, 3, false},
		{"tie counts against the truth", []float64{0.5, 0.5, 0.1}, 1, 2, false},
		{"tie, truth listed first", []float64{0.5, 0.5, 0.1}, 0, 2, false},
		{"all tied", []float64{1, 1, 1, 1}, 2, 4, false},
		{"NaN candidate ranks above", []float64{0.5, nan, 0.1}, 0, 2, false},
		{"NaN truth ranks last", []float64{nan, 0.5, 0.1}, 0, 3, false},
		{"single candidate", []float64{0.3}, 0, 1, false},
		{"truth out of range", []float64{0.3}, 1, 0, true},
		{"negative truth", []float64{0.3}, -1, 0, true},
	} {
		got, err := Rank(tc.scores, tc.truth)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestRankingMetrics(t *testing.T) {
	// Ranks 1, 2, 3, 10, 11: Top-1 1/5, Top-3 3/5, Top-10 4/5, MRR (1 + 1/2 + 1/3 + 1/10 + 1/11)/5.
	got, err := RankingMetrics([]int{1, 2, 3, 10, 11})
	want := RankingResult{Top1: 0.2, Top3: 0.6, Top10: 0.8, MRR: (1 + 0.5 + 1.0/3 + 0.1 + 1.0/11) / 5}
	if err != nil || !near(got.Top1, want.Top1) || !near(got.Top3, want.Top3) || !near(got.Top10, want.Top10) || !near(got.MRR, want.MRR) {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	// Ranks from a row with ties: the pessimistic rank feeds the metrics.
	r, _ := Rank([]float64{0.7, 0.7, 0.7}, 0)
	got, err = RankingMetrics([]int{r})
	if err != nil || got.Top1 != 0 || got.Top3 != 1 || !near(got.MRR, 1.0/3) {
		t.Errorf("tied row: got %+v, %v; want Top1 0, Top3 1, MRR 1/3", got, err)
	}
	for _, bad := range [][]int{nil, {1, 0}} {
		if _, err := RankingMetrics(bad); err == nil {
			t.Errorf("RankingMetrics(%v): want an error", bad)
		}
	}
}
