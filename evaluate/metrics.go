package evaluate

import (
	"fmt"
	"math"
)

// Accuracy is the fraction of predictions equal to the gold labels.
func Accuracy(pred, gold []int) (float64, error) {
	if len(pred) != len(gold) {
		return 0, fmt.Errorf("accuracy: %d predictions for %d gold labels", len(pred), len(gold))
	}
	if len(gold) == 0 {
		return 0, fmt.Errorf("accuracy: no examples")
	}
	n := 0
	for i := range pred {
		if pred[i] == gold[i] {
			n++
		}
	}
	return float64(n) / float64(len(gold)), nil
}

// Argmax returns the index of the largest value and that value. Ties go to the lowest index; NaN entries
// (a class with no prototype, e.g. no support example) are never chosen. A row with no number gives -1, NaN.
func Argmax(row []float64) (int, float64) {
	best, bv := -1, math.NaN()
	for i, v := range row {
		if math.IsNaN(v) {
			continue
		}
		if best < 0 || v > bv {
			best, bv = i, v
		}
	}
	return best, bv
}

// AssignPrototypes assigns each query (a row of similarities to the prototypes) to its Argmax and returns the
// assignments and each query's best similarity. A row with no number is an error naming it.
func AssignPrototypes(sims [][]float64) (pred []int, best []float64, err error) {
	pred = make([]int, len(sims))
	best = make([]float64, len(sims))
	for i, row := range sims {
		pred[i], best[i] = Argmax(row)
		if pred[i] < 0 {
			return nil, nil, fmt.Errorf("assign prototypes: query %d has no similarity to any prototype", i)
		}
	}
	return pred, best, nil
}

// MeanStd returns the mean and the population standard deviation (divide by n, numpy's default) of xs.
func MeanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(xs)))
}
