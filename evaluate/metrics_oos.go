package evaluate

import (
	"fmt"
	"math"
)

// OOS is the out-of-scope label in OOSMetrics' gold labels: any negative class index.
const OOS = -1

// OOSResult holds DSE's four out-of-scope detection metrics (§4.2), each a fraction in [0, 1].
type OOSResult struct {
	// Accuracy: over all queries, the prediction (an intent, or out-of-scope when the best similarity is
	// below the threshold) equals the gold label, out-of-scope counted as one more class.
	Accuracy float64 `json:"accuracy"`
	// InAccuracy: the same over the in-scope queries only (a flagged in-scope query is wrong).
	InAccuracy float64 `json:"in_accuracy"`
	// OOSAccuracy: accuracy of the binary in-scope / out-of-scope decision over all queries.
	OOSAccuracy float64 `json:"oos_accuracy"`
	// OOSRecall: the fraction of out-of-scope queries flagged out-of-scope.
	OOSRecall float64 `json:"oos_recall"`
}

// These readings of the paper's one-line definitions agree with its tables: in Table 3 (BERT, mean−std),
// Accuracy 33.96 = (4500·36.01 + 1000·24.77)/5500, so Accuracy mixes In-Accuracy and OOS-Recall by the
// counts, and OOS-Accuracy (80.58, near the 82% in-scope share when few queries are flagged) is the binary one.

// OOSMetrics scores out-of-scope detection. pred[i] is the prototype query i was assigned to, best[i] its
// similarity to that prototype, gold[i] its intent or a negative value (OOS) when out-of-scope. A query is
// flagged out-of-scope when best[i] < threshold. Both kinds of query must be present.
func OOSMetrics(pred []int, best []float64, gold []int, threshold float64) (OOSResult, error) {
	if len(pred) != len(gold) || len(best) != len(gold) {
		return OOSResult{}, fmt.Errorf("oos metrics: %d predictions, %d similarities, %d gold labels", len(pred), len(best), len(gold))
	}
	var nIn, nOut, correct, inCorrect, binCorrect, flaggedOut int
	for i, g := range gold {
		flagged := best[i] < threshold
		if g < 0 {
			nOut++
			if flagged {
				correct++
				binCorrect++
				flaggedOut++
			}
			continue
		}
		nIn++
		if !flagged {
			binCorrect++
			if pred[i] == g {
				correct++
				inCorrect++
			}
		}
	}
	if nIn == 0 || nOut == 0 {
		return OOSResult{}, fmt.Errorf("oos metrics: %d in-scope and %d out-of-scope queries, want both", nIn, nOut)
	}
	n := float64(len(gold))
	return OOSResult{
		Accuracy:    float64(correct) / n,
		InAccuracy:  float64(inCorrect) / float64(nIn),
		OOSAccuracy: float64(binCorrect) / n,
		OOSRecall:   float64(flaggedOut) / float64(nOut),
	}, nil
}

// OOSThresholds returns DSE's two thresholds: the mean and mean−std (population std) of the queries' best
// similarities. As in the paper they are computed over the test queries themselves (transductively).
func OOSThresholds(best []float64) (mean, meanMinusStd float64, err error) {
	if len(best) == 0 {
		return 0, 0, fmt.Errorf("oos thresholds: no queries")
	}
	m, s := MeanStd(best)
	return m, m - s, nil
}

// OOSAuthorsMetrics scores out-of-scope detection as the DSE authors' code does (amazon-research/dse,
// evaluate/utils/test_util.py, test_oos): pred[i] and gold[i] are class indices, oosIdx the out-of-scope
// class (a query predicted or labelled oosIdx is out-of-scope). Accuracy is (pred == gold) over all queries;
// InAccuracy the same over the queries whose gold is not oosIdx; OOSAccuracy the agreement of the binary
// out-of-scope indicators over all queries; OOSRecall = TP/(TP+FN) of those indicators. Both kinds of query
// must be present (the authors' code would divide by zero).
func OOSAuthorsMetrics(pred, gold []int, oosIdx int) (OOSResult, error) {
	if len(pred) != len(gold) {
		return OOSResult{}, fmt.Errorf("oos metrics: %d predictions, %d gold labels", len(pred), len(gold))
	}
	var nIn, correct, inCorrect, binCorrect, tp, fn int
	for i, g := range gold {
		if pred[i] == g {
			correct++
		}
		if (pred[i] == oosIdx) == (g == oosIdx) {
			binCorrect++
		}
		if g != oosIdx {
			nIn++
			if pred[i] == g {
				inCorrect++
			}
			continue
		}
		if pred[i] == oosIdx {
			tp++
		} else {
			fn++
		}
	}
	if nIn == 0 || tp+fn == 0 {
		return OOSResult{}, fmt.Errorf("oos metrics: %d in-scope and %d out-of-scope queries, want both", nIn, tp+fn)
	}
	n := float64(len(gold))
	return OOSResult{
		Accuracy:    float64(correct) / n,
		InAccuracy:  float64(inCorrect) / float64(nIn),
		OOSAccuracy: float64(binCorrect) / n,
		OOSRecall:   float64(tp) / float64(tp+fn),
	}, nil
}

// normalizeRows divides each row by its L2 norm in place, leaving an all-zero row as it is: scikit-learn's
// preprocessing.normalize (norm="l2", axis=1), which the authors' code applies to the query-prototype
// similarity matrix before taking each row's maximum.
func normalizeRows(m [][]float64) {
	for _, row := range m {
		var ss float64
		for _, x := range row {
			ss += x * x
		}
		if ss == 0 {
			continue
		}
		n := math.Sqrt(ss)
		for j := range row {
			row[j] /= n
		}
	}
}
