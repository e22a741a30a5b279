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
func TokenizePairs(pairs []Pair, tok *tokenizers.Tokenizer, maxLength int, trunc tokenizers.Truncation, workers int) (*TokenizedPairs, error) {
	return tokenizePairsFrom(pairs, 0, nil, tok, maxLength, trunc, workers)
}

// QueryFit gives the query of p the text and the encoding options it is tokenised with, from the options
// of the set (opt) and the tokenizer's model_max_length (limit, 0: none): how an objective fits a query
// that joins several utterances to its budget (DSE §4.4, objectives/dse's QueryCut).
type QueryFit func(p Pair, opt tokenizers.BatchOptions, limit int) (string, tokenizers.BatchOptions)

// TokenizePairsWith is TokenizePairs with each query fitted by fit (nil: encoded as a response is).
func TokenizePairsWith(pairs []Pair, fit QueryFit, tok *tokenizers.Tokenizer, maxLength int, trunc tokenizers.Truncation, workers int) (*TokenizedPairs, error) {
	return tokenizePairsFrom(pairs, 0, fit, tok, maxLength, trunc, workers)
}

// tokenizePairsFrom is TokenizePairsWith of pairs that come first at position base of a larger set, which
// an error names.
func tokenizePairsFrom(pairs []Pair, base int, fit QueryFit, tok *tokenizers.Tokenizer, maxLength int, trunc tokenizers.Truncation, workers int) (*TokenizedPairs, error) {
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
					q, qopt := pairs[i].Query, opt
					if fit != nil {
						q, qopt = fit(pairs[i], opt, tok.ModelMaxLength())
					}
					if out.Query[i], err = encodeSide(tok, q, qopt); err == nil {
						out.Response[i], err = encodeSide(tok, pairs[i].Response, opt)
					}
					if err != nil {
						errs[w] = fmt.Errorf("tokenize pair %d (dialogue %q of %s): %w", base+i, pairs[i].Dialogue, pairs[i].Corpus, err)
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
