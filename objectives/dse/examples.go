package dse

import (
	"fmt"

	"convrep/datasets"
	"convrep/objectives"
)

// ExampleCounter counts the pairs of consecutive utterances that one side's dialogues make (§3.1, data.pairs),
// with the builder the run's dataset uses: the dry run's count (objectives.DialogueExamples).
func (c Config) ExampleCounter(env objectives.DataEnv) (func(datasets.Dialogue) int, error) {
	count, err := PairCounter(PairOptions{Variant: env.Pairs, MinWords: env.MinWords, BothDirections: env.BothDirections})
	if err != nil {
		return nil, fmt.Errorf("data.pairs: %w", err)
	}
	return count, nil
}

// PairCounter returns a counter of the pairs opt makes: each call adds one dialogue and returns its pairs.
func PairCounter(opt PairOptions) (func(datasets.Dialogue) int, error) {
	b, err := NewPairBuilder(opt)
	if err != nil {
		return nil, err
	}
	return datasets.NewPairCounter(b).Add, nil
}
