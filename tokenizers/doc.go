// Package tokenizers turns dialogue text into the input ids of BERT,
// DistilBERT and RoBERTa exactly as HuggingFace's slow (Python)
// tokenizers of transformers 4.29 do, in pure Go.
//
// Load reads a HuggingFace tokenizer directory: vocab.txt (WordPiece) or
// vocab.json + merges.txt (byte-level BPE), or else tokenizer.json, plus
// tokenizer_config.json, special_tokens_map.json and added_tokens.json.
// Save writes the same slow layout back, byte for byte as save_pretrained.
//
// Role markers such as "[USR]" and "[SYS]" are added with
// AddSpecialTokens (case-sensitive, never lowercased) or, as TOD-BERT's
// pretraining does, with AddTokens (lowercased on uncased models). Any
// number of them may appear anywhere in a text; so may the model's own
// special tokens, which are cut out of the text as HF does.
//
// Batches are built with EncodeBatch, EncodePairBatch or EncodeInputs:
// truncation from the right or, for dialogue histories that must keep
// their latest turns, from the left (pairs lose tokens longest-first), and
// right padding to the longest row or to MaxLength.
//
// The package is built on github.com/sugarme/tokenizer v0.3.0: BERT's
// subwords come from its WordPiece model and RoBERTa's BPE model
// implements its tokenizer.Model interface. Its pipeline is not used:
// its normaliser, added-token matching and BPE differ from HF's and can
// panic or exit on some inputs, so
// normalisation, pre-tokenization, special tokens and post-processing are
// done here. Invalid UTF-8 is read as U+FFFD per byte; no input panics.
package tokenizers
