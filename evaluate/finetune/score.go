package finetune

import "convrep/evaluate"

// Metrics of a classifier on a test set: micro and macro F1 at threshold 0.5 for multi-label tasks, accuracy
// for single-label ones.
type Metrics struct {
	Accuracy float64 `json:"accuracy,omitempty"`
	MicroF1  float64 `json:"micro_f1,omitempty"`
	MacroF1  float64 `json:"macro_f1,omitempty"`
}

// Evaluate scores c on ex.
func (c *Classifier) Evaluate(ex []Example) (Metrics, error) {
	probs, err := c.Scores(texts(ex))
	if err != nil {
		return Metrics{}, err
	}
	if !c.cfg.MultiLabel {
		pred, gold := make([]int, len(ex)), make([]int, len(ex))
		for i, p := range probs {
			pred[i], _ = evaluate.Argmax(p)
			gold[i] = ex[i].Labels[0]
		}
		acc, err := evaluate.Accuracy(pred, gold)
		return Metrics{Accuracy: acc}, err
	}
	pred, gold := make([][]bool, len(ex)), make([][]bool, len(ex))
	for i, p := range probs {
		pred[i], gold[i] = make([]bool, c.cfg.Classes), make([]bool, c.cfg.Classes)
		for k, v := range p {
			pred[i][k] = v > 0.5
		}
		for _, l := range ex[i].Labels {
			gold[i][l] = true
		}
	}
	f, err := evaluate.MultiLabelF1(pred, gold)
	return Metrics{MicroF1: f.Micro, MacroF1: f.Macro}, err
}

// score is the validation number early stopping follows: micro F1 or accuracy.
func (c *Classifier) score(ex []Example) (float64, error) {
	m, err := c.Evaluate(ex)
	if c.cfg.MultiLabel {
		return m.MicroF1, err
	}
	return m.Accuracy, err
}

// Predict returns each text's most probable class (single-label tasks).
func (c *Classifier) Predict(texts []string) ([]int, error) {
	probs, err := c.Scores(texts)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(probs))
	for i, p := range probs {
		out[i], _ = evaluate.Argmax(p)
	}
	return out, nil
}
