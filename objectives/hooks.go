package objectives

import (
	"github.com/sugarme/gotch/ts"

	"convrep/models"
)

// Optional interfaces an objective may implement beside Objective. The trainer checks for them with a type
// assertion, so an objective that needs none (DSE) is unaffected.

// Progress is where training stands when a hook runs.
type Progress struct {
	Step       int64 // optimiser steps done, the one just made included
	Epoch      int   // the epoch the step belonged to, counted from 0
	EndOfEpoch bool  // the step was the last of its epoch
}

// AfterStepper is an objective that acts after each optimiser step, once the weights have changed (FutureTOD
// copies the student into its teacher every E epochs or steps). The trainer calls it before it logs and
// checkpoints the step, so a checkpoint holds the state the hook left.
type AfterStepper interface {
	AfterStep(p Progress) error
}

// Stateful is an objective holding tensors of its own that are not trained by the optimiser but that a
// resumed run needs to continue exactly (FutureTOD's teacher). State returns the live tensors by name; the
// trainer saves their values in each checkpoint and, on resume, copies the stored values back into the same
// tensors in place (names, shapes and dtypes must match).
type Stateful interface {
	State() map[string]*ts.Tensor
}

// Embedder is an objective that says how its encoder turns a text into one vector: the pooling it trains and
// is evaluated with, and whether the vectors are L2-normalised (as cosine-based evaluation does). The trainer
// writes it into the saved model (sentence-transformers' Pooling and Normalize modules). An objective that
// does not implement it embeds as the similarity suite does: mean pooling, normalised.
type Embedder interface {
	Embedding() (pooling models.Pooling, normalize bool)
}

// EmbeddingOf is o's declared embedding, or the similarity suite's.
func EmbeddingOf(o Objective) (models.Pooling, bool) {
	if e, ok := o.(Embedder); ok {
		return e.Embedding()
	}
	return models.Mean, true
}

// Validator is an objective whose held-out measure is not its training loss: an MLM-based one reports the
// perplexity, exp of the mean negative log-likelihood of the masked tokens (FutureTOD §3.1 stops early on
// it). ValidationLoss gives one batch's summed NLL (a detached 0-dim tensor on the device, never read back
// here) and the number of tokens it sums; the trainer runs it in eval mode under no-grad, and the batches
// come from a dataset that keeps its masks from one evaluation to the next. An objective without it is
// validated by the mean of Loss(batch, false) over the batches.
type Validator interface {
	ValidationLoss(batch any) (sum *ts.Tensor, count int64, err error)
}
