package evaluate

import (
	"math"
	"strings"
	"unicode"
)

// BM25's free parameters: k1 = 1.2 and b = 0.75, the values Robertson & Zaragoza (2009, §3.4) call the usual
// choice (and Lucene's defaults). DialogueCSE §5.1.2 retrieves with BM25 and gives neither.
const (
	BM25K1 = 1.2
	BM25B  = 0.75
)

// BM25 is an inverted index of documents scored by Okapi BM25 (Robertson & Zaragoza 2009, "The Probabilistic
// Relevance Framework: BM25 and Beyond", §3.4), which DialogueCSE §5.1.2 retrieves its candidates with:
//
//	score(D, Q) = Σ_{t ∈ Q} IDF(t) · f(t,D)·(k1+1) / (f(t,D) + k1·(1 − b + b·|D|/avgdl))
//	IDF(t)      = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))
//
// over the distinct terms t of the query (a term repeated in the query counts once), with f(t,D) the count of t
// in D, |D| D's length in terms, avgdl the mean length, N the number of documents and n(t) those holding t.
// The IDF is the Robertson-Spärck Jones weight with 1 added inside the logarithm, as Lucene has it, so that a
// term in more than half the documents weighs a little rather than negatively. Terms are bm25Terms.
//
// A BM25 keeps scratch space between calls: it is not safe for concurrent use.
type BM25 struct {
	k1, b    float64
	postings map[string][]bm25Posting
	lengths  []int32
	avgLen   float64
	scores   []float64 // scratch: per document, zero between calls
}

type bm25Posting struct{ doc, tf int32 }

// NewBM25 indexes docs; a document's number is its index in docs.
func NewBM25(docs []string, k1, b float64) *BM25 {
	x := &BM25{k1: k1, b: b, postings: map[string][]bm25Posting{}, lengths: make([]int32, len(docs)), scores: make([]float64, len(docs))}
	total := 0
	for d, text := range docs {
		terms := bm25Terms(text)
		x.lengths[d] = int32(len(terms))
		total += len(terms)
		tf := map[string]int32{}
		var order []string
		for _, t := range terms {
			if tf[t] == 0 {
				order = append(order, t)
			}
			tf[t]++
		}
		for _, t := range order {
			x.postings[t] = append(x.postings[t], bm25Posting{doc: int32(d), tf: tf[t]})
		}
	}
	if len(docs) > 0 {
		x.avgLen = float64(total) / float64(len(docs))
	}
	return x
}

// Scored is a document and its score.
type Scored struct {
	Doc   int
	Score float64
}

// Score returns every document sharing a term with query, and its score, in document order.
func (x *BM25) Score(query string) []Scored {
	n := float64(len(x.lengths))
	seen := map[string]bool{}
	for _, t := range bm25Terms(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := x.postings[t]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			norm := x.k1 * (1 - x.b + x.b*float64(x.lengths[p.doc])/x.avgLen)
			tf := float64(p.tf)
			x.scores[p.doc] += idf * tf * (x.k1 + 1) / (tf + norm)
		}
	}
	// Every term adds a positive amount, so a document that shares one has a score above 0. One pass over
	// the documents collects them in order (cheaper than sorting the touched ones for a pool of ~20k).
	var out []Scored
	for d, s := range x.scores {
		if s != 0 {
			out = append(out, Scored{Doc: d, Score: s})
			x.scores[d] = 0
		}
	}
	return out
}

// bm25Terms splits s into BM25's terms: the maximal runs of letters and digits, lower-cased ("I'd like 2
// tickets!" -> i, d, like, 2, tickets).
func bm25Terms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
