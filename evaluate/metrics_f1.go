package evaluate

import "fmt"

// F1 holds the micro and macro F1 of multi-label predictions.
type F1 struct {
	Micro float64 `json:"micro_f1"`
	Macro float64 `json:"macro_f1"`
}

// MultiLabelF1 scores multi-label predictions (pred[i][c] and gold[i][c] say whether example i has label c).
// Micro F1 pools true and false positives and negatives over all labels; macro F1 averages the per-label F1
// over the labels that occur in gold or pred (a label absent from both is left out rather than counted as 0
// or 1; scikit-learn counts it as 0 with a warning). An F1 with no positives at all (2TP+FP+FN = 0) is 0.
func MultiLabelF1(pred, gold [][]bool) (F1, error) {
	if len(pred) != len(gold) {
		return F1{}, fmt.Errorf("f1: %d predictions for %d gold rows", len(pred), len(gold))
	}
	if len(gold) == 0 {
		return F1{}, fmt.Errorf("f1: no examples")
	}
	n := len(gold[0])
	tp, fp, fn := make([]int, n), make([]int, n), make([]int, n)
	for i := range gold {
		if len(pred[i]) != n || len(gold[i]) != n {
			return F1{}, fmt.Errorf("f1: row %d has %d predicted and %d gold labels, want %d", i, len(pred[i]), len(gold[i]), n)
		}
		for c := 0; c < n; c++ {
			switch {
			case pred[i][c] && gold[i][c]:
				tp[c]++
			case pred[i][c]:
				fp[c]++
			case gold[i][c]:
				fn[c]++
			}
		}
	}
	f1 := func(tp, fp, fn int) float64 {
		if 2*tp+fp+fn == 0 {
			return 0
		}
		return float64(2*tp) / float64(2*tp+fp+fn)
	}
	var res F1
	var TP, FP, FN, used int
	for c := 0; c < n; c++ {
		TP, FP, FN = TP+tp[c], FP+fp[c], FN+fn[c]
		if tp[c]+fp[c]+fn[c] > 0 {
			res.Macro += f1(tp[c], fp[c], fn[c])
			used++
		}
	}
	res.Micro = f1(TP, FP, FN)
	if used > 0 {
		res.Macro /= float64(used)
	}
	return res, nil
}
