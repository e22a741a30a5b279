package datasets

import "unicode"

// Pair is one positive pair for contrastive pretraining: Query is the anchor side, Response its positive.
// Dialogue is the ID of the dialogue both came from, Corpus its corpus. An objective builds them (DSE's
// constructions are objectives/dse's); the cache tokenises and keeps them.
type Pair struct {
	Query    string
	Response string
	Dialogue string
	Corpus   string
	// QueryUtterances is how many utterances Query joins: k for the query of a k-1 pair, 1 otherwise (0 is
	// read as 1). A QueryFit may give such a query more tokens than a response (TokenizePairsWith).
	QueryUtterances int
}

// Pairer builds pairs from dialogues given one at a time, so that a stream of dialogues (a cache build, a
// count) never holds more than one.
type Pairer interface {
	// Add appends the pairs of d, after those of the dialogues added before it, to out.
	Add(out []Pair, d Dialogue) []Pair
}

// SepFor returns the query separator for a tokenizer whose sep_token is
// sep: " [SEP] " for BERT and DistilBERT, " </s> " for RoBERTa.
func SepFor(sep string) string { return " " + sep + " " }

// WordCount counts whitespace-separated words as len(strings.Fields(s))
// would, without allocating.
func WordCount(s string) int {
	n := 0
	in := false
	for _, r := range s {
		space := unicode.IsSpace(r)
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}
