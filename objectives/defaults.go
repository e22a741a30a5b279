package objectives

import "convrep/models"

// What the trainer takes where an objective implements no optional interface.

// EmbeddingOf is o's declared embedding (Embedder), or the similarity suite's: mean pooling, normalised.
func EmbeddingOf(o Objective) (models.Pooling, bool) {
	if e, ok := o.(Embedder); ok {
		return e.Embedding()
	}
	return models.Mean, true
}

// TrainDefaultsOf is c's TrainDefaults: its own, or the zero value (head_lr = lr, the last partial batch
// dropped) for a Config without any, and for nil.
func TrainDefaultsOf(c Config) TrainDefaults {
	if d, ok := c.(TrainDefaulter); ok {
		return d.TrainDefaults()
	}
	return TrainDefaults{}
}
