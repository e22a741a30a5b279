package claims

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Summary is one model's number on one row over its training seeds. Mean and Std are fractions, like the
// result files' rows.
type Summary struct {
	Mean float64 `json:"mean"`
	// Std is the sample std (n−1) of the seed folders' means, or, when N is 1, the one file's row std: the
	// spread over the evaluation's sampled splits (SplitSpread).
	Std         float64 `json:"std"`
	N           int     `json:"n"` // seed folders that have the row
	SplitSpread bool    `json:"split_spread"`
}

// Summarize averages the row means of n seed folders. splitStd is the row's std in the file when there is
// one folder only; it is the cell's spread then. With no values the summary has N = 0 (no result).
func Summarize(seedMeans []float64, splitStd float64) Summary {
	n := len(seedMeans)
	switch n {
	case 0:
		return Summary{}
	case 1:
		return Summary{Mean: seedMeans[0], Std: splitStd, N: 1, SplitSpread: true}
	}
	var mean float64
	for _, x := range seedMeans {
		mean += x
	}
	mean /= float64(n)
	var ss float64
	for _, x := range seedMeans {
		ss += (x - mean) * (x - mean)
	}
	return Summary{Mean: mean, Std: math.Sqrt(ss / float64(n-1)), N: n}
}

// CohenD is the effect size of better over worse: the difference of the means over the root mean square of
// the two spreads, √((s_b² + s_w²)/2). With no spread at all it is +Inf, −Inf or 0 by the sign of the
// difference.
func CohenD(better, worse Summary) float64 {
	diff := better.Mean - worse.Mean
	pooled := math.Sqrt((better.Std*better.Std + worse.Std*worse.Std) / 2)
	if pooled == 0 {
		switch {
		case diff > 0:
			return math.Inf(1)
		case diff < 0:
			return math.Inf(-1)
		}
		return 0
	}
	return diff / pooled
}

// Effect is an effect size as report.json holds it: a number, or the strings "+Inf" and "-Inf" (which JSON
// numbers cannot be).
type Effect float64

// MarshalJSON writes finite values as numbers and infinities as "+Inf" or "-Inf".
func (e Effect) MarshalJSON() ([]byte, error) {
	f := float64(e)
	switch {
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	case math.IsNaN(f):
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Effect) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"+Inf"`:
		*e = Effect(math.Inf(1))
		return nil
	case `"-Inf"`:
		*e = Effect(math.Inf(-1))
		return nil
	case "null":
		*e = Effect(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("effect size %s: want a number, \"+Inf\" or \"-Inf\"", b)
	}
	*e = Effect(f)
	return nil
}
