package dse

import (
	"fmt"
	"strings"
	"unicode"

	"convrep/datasets"
	"convrep/tokenizers"
)

// QueryCut is how a query that joins k > 1 utterances is fitted to its
// budget of B = k × max_length tokens (DSE §4.4).
type QueryCut string

const (
	// QueryCutWords is the DSE authors' cut (pretrain/training.py,
	// PSCTrainer.prepare_pairwise_input_multiturn_concatenate): the query
	// keeps its last int(0.9·B) white-space separated words (Python's
	// str.split), joined by single spaces, and is then encoded with
	// max_length B and HuggingFace's truncation=True, which cuts the end
	// when those words still make more than B tokens. The default.
	QueryCutWords QueryCut = "words"
	// QueryCutTokensLeft encodes the whole query and keeps [CLS] and its
	// last B−1 tokens, so the utterance next to the response always stays:
	// the paper's words (§4.4 says only that the utterances are joined),
	// and convrep's cut before issue 23.
	QueryCutTokensLeft QueryCut = "tokens_left"
)

// ParseQueryCut reads a query cut by name ("" is the default).
func ParseQueryCut(s string) (QueryCut, error) {
	switch c := QueryCut(strings.ToLower(strings.TrimSpace(s))); c {
	case "", QueryCutWords:
		return QueryCutWords, nil
	case QueryCutTokensLeft:
		return c, nil
	}
	return "", fmt.Errorf("query cut %q is not one of %s, %s", s, QueryCutWords, QueryCutTokensLeft)
}

// TokenizePairs is datasets.TokenizePairsWith with each query fitted as cut says ("" = QueryCutWords).
//
// The query of a k-1 pair (QueryUtterances k > 1, DSE §4.4) gets a budget
// of B = k × maxLength tokens, as in the DSE authors' code
// (pretrain/training.py, PSCTrainer.prepare_pairwise_input_multiturn_concatenate:
// max_query_length = num_turn * max_length), capped at the tokenizer's
// model_max_length (the model's positions) when it has one, never below
// maxLength. The cut fits the query to it: by default as the
// authors do, the last int(0.9·B) words, then the end cut by the tokenizer
// (QueryCutWords); or by tokens from the left (QueryCutTokensLeft).
func TokenizePairs(pairs []datasets.Pair, cut QueryCut, tok *tokenizers.Tokenizer, maxLength int, trunc tokenizers.Truncation, workers int) (*datasets.TokenizedPairs, error) {
	return datasets.TokenizePairsWith(pairs, cut.Fit, tok, maxLength, trunc, workers)
}

// Fit is the text and the encoding options of p's query, a datasets.QueryFit: as given for a
// query of one utterance or without a budget; otherwise k × the budget, at
// most limit (> 0: the model's positions) but never less than the budget,
// cut as c says (see TokenizePairs).
func (c QueryCut) Fit(p datasets.Pair, opt tokenizers.BatchOptions, limit int) (string, tokenizers.BatchOptions) {
	k := p.QueryUtterances
	if k <= 1 || opt.MaxLength == 0 {
		return p.Query, opt
	}
	budget := k * opt.MaxLength
	if c == QueryCutTokensLeft {
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
