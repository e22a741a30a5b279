// Package models holds the BERT, RoBERTa and DistilBERT encoders built on gotch, their MLM heads, pooling,
// and the loading and saving of HuggingFace checkpoints (config.json with model.safetensors or
// pytorch_model.bin).
//
// Parameters live in a gotch VarStore under exactly the names of HuggingFace's checkpoints
// (bert.encoder.layer.0.attention.self.query.weight, ...), so that loading is a walk, not a translation.
// The transformer block is shared; what differs per architecture (RoBERTa's position ids, DistilBERT's names)
// is kept visible in a few lines each (embeddings.go, block.go).
package models
