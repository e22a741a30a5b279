package objectives

// LayerFreezer is implemented by an objective that trains only the top of the encoder, as DialogueCSE
// (§5.3: "we freeze the bottom 6 layers of BERT to prevent catastrophic forgetting which simultaneously
// enables the model to be trained with larger batch size"). The trainer leaves the embeddings and the
// bottom FrozenLayers() encoder layers out of the optimiser and of gradient clipping and stops autograd
// there. The embeddings go with them: a gradient that has to reach them would flow through the frozen
// layers and keep their activations, which is the memory the paper's larger batch comes from.
type LayerFreezer interface {
	FrozenLayers() int
}

// FrozenLayers is the number of bottom encoder layers DialogueCSE leaves untrained.
func (o *dialogueCSE) FrozenLayers() int { return o.cfg.FreezeLayers }
