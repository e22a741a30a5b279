package mlm

import (
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/objectives"
)

var _ objectives.Validator = (*mlm)(nil)

// ValidationLoss is the held-out measure of masked language modelling: the summed NLL of the batch's masked
// tokens in eval mode and their number, whose mean's exponential is the perplexity the trainer reports.
func (o *mlm) ValidationLoss(batch any) (*ts.Tensor, int64, error) {
	b, err := objectives.BatchAs[Batch](Name, batch)
	if err != nil {
		return nil, 0, err
	}
	mean, err := Loss(o.model, b.Input, b.Labels, false)
	if err != nil {
		return nil, 0, err
	}
	var sum *ts.Tensor
	err = torch.Catch("mlm validation", func() error {
		sum = mean.MustDetach(false).MustMulScalar(ts.IntScalar(b.Labels.N), true)
		return nil
	})
	mean.MustDrop()
	return sum, b.Labels.N, err
}
