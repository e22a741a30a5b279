package evaluate

import "fmt"

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
