package dse

import (
	"fmt"

	"convrep/datasets"
	"convrep/objectives"
)

// ExampleCounter counts the pairs of consecutive utterances that one side's dialogues make (§3.1, data.pairs),
// with the builder the run's dataset uses: the dry run's count (objectives.DialogueExamples).
func (c Config) ExampleCounter(env objectives.DataEnv) (func(datasets.Dialogue) int, error) {
	b, err := NewPairBuilder(PairOptions{Variant: env.Pairs, MinWords: env.MinWords, BothDirections: env.BothDirections})
	if err != nil {
		return nil, fmt.Errorf("data.pairs: %w", err)
	}
	return datasets.NewPairCounter(b).Add, nil
}
