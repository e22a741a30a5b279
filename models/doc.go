// Package models holds the BERT, RoBERTa and DistilBERT encoders built on gotch, their MLM heads, pooling,
// and the loading and saving of HuggingFace checkpoints (config.json with model.safetensors or
// pytorch_model.bin).
//
// Parameters live in a gotch VarStore under exactly the names of HuggingFace's checkpoints
// (bert.encoder.layer.0.attention.self.query.weight, ...), so that loading is a walk, not a translation.
// The transformer block is shared; what differs per architecture (names, RoBERTa's position ids, token types,
// the MLM heads, config.json's fields) is one table per family in family.go, which the rest asks.
package models
