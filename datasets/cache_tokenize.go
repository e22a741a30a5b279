package datasets

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"convrep/tokenizers"
)

// TokenizedPairs holds the model ids of pairs, row i being pair i: each
// side encoded on its own with the model's special tokens ([CLS] … [SEP]),
// truncated to the maximum length, not padded.
type TokenizedPairs struct {
	Query    [][]int32
	Response [][]int32
}

// Len is the number of pairs.
func (tp *TokenizedPairs) Len() int { return len(tp.Query) }

// validate checks that both sides have one row per pair.
func (tp *TokenizedPairs) validate() error {
	if tp == nil {
		return fmt.Errorf("tokenized pairs: nil")
	}
	if len(tp.Query) != len(tp.Response) {
		return fmt.Errorf("tokenized pairs: %d queries but %d responses", len(tp.Query), len(tp.Response))
	}
	return nil
}

// tokenizeChunk is how many pairs a worker takes at a time: large enough
// to make the shared counter cheap, small enough to balance the tail.
const tokenizeChunk = 256

// TokenizePairs encodes every pair on workers goroutines (<= 0: one per
// CPU), keeping the pairs' order. Each side gets what tok.EncodeBatch gives
// a single text with MaxLength maxLength (0: no limit) and Truncation
// trunc; padding is left to batching.
//
// The query of a k-1 pair (QueryUtterances k > 1, DSE §4.4) gets k times
// maxLength and is cut from the left, keeping the utterance next to the
// response. That is what the DSE authors' code does
// (pretrain/training.py, PSCTrainer.prepare_pairwise_input_multiturn_concatenate:
// max_query_length = num_turn * max_length; the query keeps its last
// int(0.9 * max_query_length) white-space words before it is encoded
// with that max_length). Their cut is by words and HF's right truncation
// then still cuts the end when those words make more tokens than the
// budget; here the cut is by tokens, so the end always stays. The k-fold
// budget is capped at the tokenizer's model_max_length (the model's
// positions) when it has one, never below maxLength.
func TokenizePairs(pairs []Pair, tok *tokenizers.Tokenizer, maxLength int, trunc tokenizers.Truncation, workers int) (*TokenizedPairs, error) {
	if tok == nil {
		return nil, fmt.Errorf("tokenize pairs: nil tokenizer")
	}
	if maxLength < 0 {
		return nil, fmt.Errorf("tokenize pairs: negative max length %d", maxLength)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, (len(pairs)+tokenizeChunk-1)/tokenizeChunk))
	out := &TokenizedPairs{Query: make([][]int32, len(pairs)), Response: make([][]int32, len(pairs))}
	opt := tokenizers.BatchOptions{MaxLength: maxLength, Truncation: trunc}

	var next atomic.Int64 // first pair of the next chunk
	var failed atomic.Bool
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for !failed.Load() {
				start := int(next.Add(tokenizeChunk)) - tokenizeChunk
				if start >= len(pairs) {
					return
				}
				for i := start; i < min(start+tokenizeChunk, len(pairs)); i++ {
					var err error
					if out.Query[i], err = encodeSide(tok, pairs[i].Query, queryOptions(opt, pairs[i].QueryUtterances, tok.ModelMaxLength())); err == nil {
						out.Response[i], err = encodeSide(tok, pairs[i].Response, opt)
					}
					if err != nil {
						errs[w] = fmt.Errorf("tokenize pair %d (dialogue %q of %s): %w", i, pairs[i].Dialogue, pairs[i].Corpus, err)
						failed.Store(true)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// queryOptions are the encoding options of a query that joins k
// utterances: k times the budget, at most limit (> 0: the model's
// positions) but never less than the budget, cut from the left, when k > 1
// and there is a budget (see TokenizePairs).
func queryOptions(opt tokenizers.BatchOptions, k, limit int) tokenizers.BatchOptions {
	if k <= 1 || opt.MaxLength == 0 {
		return opt
	}
	budget := k * opt.MaxLength
	if limit > 0 {
		budget = max(opt.MaxLength, min(budget, limit))
	}
	opt.MaxLength = budget
	opt.Truncation = tokenizers.TruncateLeft
	return opt
}

// QueryBudget is the most tokens TokenizePairs gives a query that joins k
// utterances, with maxLength and tok as given to it.
func QueryBudget(k, maxLength int, tok *tokenizers.Tokenizer) int {
	return queryOptions(tokenizers.BatchOptions{MaxLength: maxLength}, k, tok.ModelMaxLength()).MaxLength
}

// encodeSide encodes one text with special tokens and truncation.
func encodeSide(tok *tokenizers.Tokenizer, text string, opt tokenizers.BatchOptions) ([]int32, error) {
	var ids []int64
	if opt.MaxLength == 0 {
		var err error
		if ids, err = tok.Encode(text); err != nil {
			return nil, err
		}
	} else {
		// A batch of one is never padded: its width is its own length.
		b, err := tok.EncodeBatch([]string{text}, opt)
		if err != nil {
			return nil, err
		}
		ids = b.InputIDs[0][:b.Lengths[0]]
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		if id < math.MinInt32 || id > math.MaxInt32 {
			return nil, fmt.Errorf("id %d does not fit in int32", id)
		}
		out[i] = int32(id)
	}
	return out, nil
}
