package objectives

import "convrep/datasets"

// DialogueExamples is an optional interface of a Config whose training examples come of the dialogues alone,
// before any tokenizer or model (DSE's pairs of consecutive utterances): `train --dry-run` reads the data and
// counts them as the run will make them, on each side of the validation split, without building the model.
type DialogueExamples interface {
	// ExampleCounter returns a counter for one side's dialogues (the training or the validation ones): each call
	// adds one dialogue and returns the examples it made. env holds the data settings (data.pairs,
	// data.min_words, data.both_directions); no tokenizer.
	ExampleCounter(env DataEnv) (func(datasets.Dialogue) int, error)
}
