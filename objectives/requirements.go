package objectives

import "convrep/models"

// Requirements are what an objective needs of the backbone. A head or a token cannot be bolted on cheaply
// once the model exists, so the backbone is built with them: SpecialTokens join the tokenizer (growing the
// word embeddings, and the MLM head's bias, to the new vocabulary) and the model gets Heads.
type Requirements struct {
	// Heads the model must have; an MLM loss needs Heads.MLM (loaded from the checkpoint when it has one,
	// else initialised).
	Heads models.Heads
	// SpecialTokens are added to the tokenizer as special tokens, in this order (e.g. the role tokens
	// [USR] and [SYS] of datasets.RoleTokens); tokens the tokenizer has already keep their ids.
	SpecialTokens []string
}
