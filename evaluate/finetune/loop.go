package finetune

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"convrep/internal/cli/progress"
	"convrep/safetensors"
)

// batchStream is the stream of the generator that orders batches (the seed is the run's).
const batchStream = 0x66696e6574756e65 // "finetune"

// loop is the training loop both fine-tunings share (Train, a classifier; TrainDual, a dual encoder): epochs
// of batches in an order the seed draws, one optimiser step each, a validation every EvalEvery steps or,
// with EvalEvery 0, after every epoch, the best weights kept and put back at the end, and patience counted in
// validations (TOD-BERT main.py: the count of validations without a better score, reset by a better one, ends
// training once above the patience). The two differ only in their batches and losses: the hooks.
type loop struct {
	name                                   string // in errors: "finetune", "finetune dual"
	examples                               int    // training examples
	epochs, batchSize, evalEvery, patience int
	seed                                   uint64
	fullBatches                            bool // only full batches (in-batch negatives: every query as many candidates); else the last is smaller
	validates                              bool // there are validation data
	lowerIsBetter                          bool // validation gives a loss, not a score
	progress                               io.Writer

	step     func(idx []int) (loss float64, err error)         // one optimiser step on the training examples at idx
	validate func() (float64, error)                           // the validation score (or loss) of the weights now
	snapshot func() (map[string]safetensors.Tensor, error)     // the trained weights, in host memory
	restore  func(weights map[string]safetensors.Tensor) error // put snapshot's weights back
}

// loopRun records how a loop went.
type loopRun struct {
	epochs, steps, bestStep int
	best                    float64 // the best validation value
	valSteps                []int
	valValues               []float64
	epochLosses             []float64 // mean training loss of each epoch begun
}

// run runs the loop.
func (l loop) run(ctx context.Context) (*loopRun, error) {
	perEpoch := (l.examples + l.batchSize - 1) / l.batchSize
	if l.fullBatches {
		perEpoch = l.examples / l.batchSize
	}
	bar := progress.New(l.progress, "fine-tuning", "steps", int64(l.epochs*perEpoch), 0)
	defer bar.Finish()
	run := &loopRun{best: math.Inf(-1)}
	better := func(v float64) bool { return v > run.best }
	if l.lowerIsBetter {
		run.best, better = math.Inf(1), func(v float64) bool { return v < run.best }
	}
	var best map[string]safetensors.Tensor
	sinceBest := 0
	// validate validates the weights after the current step and keeps them when they are the best so far; it
	// reports whether patience has run out.
	validate := func() (bool, error) {
		v, err := l.validate()
		if err != nil {
			return false, err
		}
		run.valSteps, run.valValues = append(run.valSteps, run.steps), append(run.valValues, v)
		bar.Describe(fmt.Sprintf("fine-tuning (val %.4f)", v))
		if better(v) {
			run.best, run.bestStep, sinceBest = v, run.steps, 0
			best, err = l.snapshot()
			return false, err
		}
		sinceBest++
		return l.patience > 0 && sinceBest > l.patience, nil
	}
	g := rand.New(rand.NewPCG(l.seed, batchStream))
	for epoch := 1; epoch <= l.epochs; epoch++ {
		run.epochs = epoch
		order := g.Perm(l.examples)
		sum, n, stop := 0.0, 0, false
		for start := 0; start < perEpoch*l.batchSize && start < len(order) && !stop; start += l.batchSize {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("%s: stopped in epoch %d: %w", l.name, epoch, err)
			}
			v, err := l.step(order[start:min(start+l.batchSize, len(order))])
			if err != nil {
				return nil, fmt.Errorf("%s: epoch %d: %w", l.name, epoch, err)
			}
			sum, n = sum+v, n+1
			run.steps++
			bar.Add(1)
			if l.validates && l.evalEvery > 0 && run.steps%l.evalEvery == 0 {
				if stop, err = validate(); err != nil {
					return nil, err
				}
			}
		}
		run.epochLosses = append(run.epochLosses, sum/float64(max(n, 1)))
		if !stop && l.validates && l.evalEvery == 0 {
			var err error
			if stop, err = validate(); err != nil {
				return nil, err
			}
		}
		if stop {
			break
		}
	}
	if best == nil {
		run.bestStep = run.steps
		return run, nil
	}
	return run, l.restore(best)
}
