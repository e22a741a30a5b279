package mlm

import (
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/inputs"
)

var _ objectives.Validator = (*mlm)(nil)

// ValidationLoss is the held-out measure of masked language modelling: the summed NLL of the batch's masked
// tokens in eval mode and their number, whose mean's exponential is the perplexity the trainer reports.
func (o *mlm) ValidationLoss(batch any) (*ts.Tensor, int64, error) {
	b, err := objectives.BatchAs[Batch](Name, batch)
	if err != nil {
		return nil, 0, err
	}
	sum, err := SumNLL(o.model, b.Input, b.Labels)
	return sum, b.Labels.N, err
}

// SumNLL is the summed negative log-likelihood of the tokens chosen in labels, in eval mode and detached:
// Loss's mean times their number (a Validator's sum).
func SumNLL(m *models.Model, masked models.Input, labels inputs.Labels) (*ts.Tensor, error) {
	var sum *ts.Tensor
	err := torch.Scoped("mlm validation", func(keep torch.Keep) error {
		mean, err := Loss(m, masked, labels, false)
		if err != nil {
			return err
		}
		sum = keep(torch.Of(mean).Detach().MulScalar(float64(labels.N)))
		return nil
	})
	return sum, err
}
