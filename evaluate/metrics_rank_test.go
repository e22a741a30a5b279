package evaluate

import (
	"math"
	"strings"
	"testing"
)

// Average precision and reciprocal rank on hand-made rankings. Positions below are 1-based ranks after
// sorting by score, highest first.
func TestAveragePrecisionAndReciprocalRank(t *testing.T) {
	nan := math.NaN()
	y, n := true, false
	for _, tc := range []struct {
		name     string
		scores   []float64
		relevant []bool
		ap, rr   float64
		err      string
	}{
		// Ranks: relevant at 1 and 3. AP = (1/1 + 2/3)/2 = 5/6; RR = 1.
		{"relevant first and third", []float64{0.9, 0.8, 0.7, 0.1}, []bool{y, n, y, n}, 5.0 / 6, 1, ""},
		// Listed out of order: sorted, 0.9 (n), 0.6 (y), 0.5 (n), 0.2 (y): AP = (1/2 + 2/4)/2 = 1/2; RR = 1/2.
		{"order comes from the scores", []float64{0.2, 0.9, 0.5, 0.6}, []bool{y, n, n, y}, 0.5, 0.5, ""},
		// One relevant at rank 3 of 3: AP = RR = 1/3.
		{"single relevant last", []float64{3, 2, 1}, []bool{n, n, y}, 1.0 / 3, 1.0 / 3, ""},
		// All relevant: AP = 1, RR = 1.
		{"all relevant", []float64{0.1, 0.2}, []bool{y, y}, 1, 1, ""},
		// Ties go against the relevant: all three at 0.5, the two irrelevant first, the relevant third.
		{"tie ranks the relevant last", []float64{0.5, 0.5, 0.5}, []bool{y, n, n}, 1.0 / 3, 1.0 / 3, ""},
		// 0.9 (n), then a tie at 0.4 of y, n, y: n first, so y at 3 and 4. AP = (1/3 + 2/4)/2 = 5/12; RR = 1/3.
		{"partial tie", []float64{0.4, 0.9, 0.4, 0.4}, []bool{y, n, n, y}, 5.0 / 12, 1.0 / 3, ""},
		// A NaN counts as the lowest: the relevant NaN is last, behind 0.2. AP = RR = 1/2.
		{"NaN relevant ranks last", []float64{nan, 0.2}, []bool{y, n}, 0.5, 0.5, ""},
		{"no relevant candidate", []float64{0.3, 0.2}, []bool{n, n}, 0, 0, "no relevant candidate"},
		{"lengths differ", []float64{0.3}, []bool{y, n}, 0, 0, "1 scores for 2 relevance flags"},
		{"empty list", nil, nil, 0, 0, "no relevant candidate"},
	} {
		ap, err1 := AveragePrecision(tc.scores, tc.relevant)
		rr, err2 := ReciprocalRank(tc.scores, tc.relevant)
		if tc.err != "" {
			for _, err := range []error{err1, err2} {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
				}
			}
			continue
		}
		if err1 != nil || err2 != nil || !near(ap, tc.ap) || !near(rr, tc.rr) {
			t.Errorf("%s: AP %v (%v), RR %v (%v); want %v, %v", tc.name, ap, err1, rr, err2, tc.ap, tc.rr)
		}
	}
}
