package datasets

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

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
// The query of a k-1 pair (QueryUtterances k > 1, DSE §4.4) gets a budget
// of B = k × maxLength tokens, as in the DSE authors' code
// (pretrain/training.py, PSCTrainer.prepare_pairwise_input_multiturn_concatenate:
// max_query_length = num_turn * max_length), capped at the tokenizer's
// model_max_length (the model's positions) when it has one, never below
// maxLength. The pair's QueryCut fits the query to it: by default as the
// authors do, the last int(0.9·B) words, then the end cut by the tokenizer
// (QueryCutWords); or by tokens from the left (QueryCutTokensLeft).
func TokenizePairs(pairs []Pair, tok *tokenizers.Tokenizer, maxLength int, trunc tokenizers.Truncation, workers int) (*TokenizedPairs, error) {
	return tokenizePairsFrom(pairs, 0, tok, maxLength, trunc, workers)
}

// tokenizePairsFrom is TokenizePairs of pairs that come first at position base of a larger set, which an
// error names.
func tokenizePairsFrom(pairs []Pair, base int, tok *tokenizers.Tokenizer, maxLength int, trunc tokenizers.Truncation, workers int) (*TokenizedPairs, error) {
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
					q, qopt := fitQuery(pairs[i], opt, tok.ModelMaxLength())
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

// fitQuery is the text and the encoding options of p's query: as given for a
// query of one utterance or without a budget; otherwise k × the budget, at
// most limit (> 0: the model's positions) but never less than the budget,
// with p.QueryCut applied (see TokenizePairs).
func fitQuery(p Pair, opt tokenizers.BatchOptions, limit int) (string, tokenizers.BatchOptions) {
	k := p.QueryUtterances
	if k <= 1 || opt.MaxLength == 0 {
		return p.Query, opt
	}
	budget := k * opt.MaxLength
	if p.QueryCut == QueryCutTokensLeft {
		opt.MaxLength = queryBudget(budget, opt.MaxLength, limit)
		opt.Truncation = tokenizers.TruncateLeft
		return p.Query, opt
	}
	// The authors' cut: num_keeped_words = int(max_query_length*0.9) of the words of t.split(), joined by
	// " ", then batch_encode_plus(max_length=max_query_length, truncation=True): for one text, HF cuts its
	// end. Their budget is not capped; the tokens are, like the other cut's, at the model's positions.
	words := pythonSplit(p.Query)
	if keep := int(float64(budget) * 0.9); len(words) > keep {
		words = words[len(words)-keep:]
	}
	opt.MaxLength = queryBudget(budget, opt.MaxLength, limit)
	opt.Truncation = tokenizers.TruncateRight
	return strings.Join(words, " "), opt
}

// queryBudget caps a query's budget at limit (> 0) but never below maxLength.
func queryBudget(budget, maxLength, limit int) int {
	if limit > 0 {
		budget = max(maxLength, min(budget, limit))
	}
	return budget
}

// pythonSplit is Python's str.split() without arguments: the runs of text between white space, where
// white space is what str.isspace calls so (Go's unicode.IsSpace and the separators U+001C–U+001F).
func pythonSplit(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
}

// QueryBudget is the most tokens TokenizePairs gives a query that joins k
// utterances, with maxLength and tok as given to it.
func QueryBudget(k, maxLength int, tok *tokenizers.Tokenizer) int {
	if k <= 1 || maxLength == 0 {
		return maxLength
	}
	return queryBudget(k*maxLength, maxLength, tok.ModelMaxLength())
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
