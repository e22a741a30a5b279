package dse

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"convrep/datasets"
)

// The pair constructions of the DSE paper.
const (
	// VariantDSE pairs each utterance with the next one (§3.1, Figure 2).
	VariantDSE = "dse"
	// VariantDSE21 pairs two consecutive utterances joined by Sep with the
	// utterance after them: (u1 [SEP] u2, u3) (§4.4).
	VariantDSE21 = "dse2-1"
	// VariantDSE31 is VariantDSE21 with three utterances in the query.
	VariantDSE31 = "dse3-1"
	// VariantDSE123 is the union of the dse, dse2-1 and dse3-1 pairs.
	VariantDSE123 = "dse123-1"
	// VariantDropout pairs every distinct utterance with itself; the two
	// views differ only by the encoder's dropout (DSE-dropout, the
	// SimCSE-unsup construction on dialogue text).
	VariantDropout = "dropout"
)

// DefaultSep joins the utterances of a multi-utterance query. Use
// datasets.SepFor to get the separator of another tokenizer (RoBERTa's "</s>").
const DefaultSep = " [SEP] "

// PaperMinWords is the paper's filter: utterances of at most 3 words are
// dropped (Appendix A.1).
const PaperMinWords = 3

// PairOptions choose how DSEPairs builds pairs.
type PairOptions struct {
	// Variant is one of the Variant* names; "" means VariantDSE.
	Variant string
	// MinWords drops every pair that holds an utterance of at most MinWords
	// whitespace-separated words (PaperMinWords in the paper). With 0, only
	// empty utterances are dropped.
	MinWords int
	// Sep joins the utterances of a multi-utterance query; "" means
	// DefaultSep. It should hold the tokenizer's own separator token so
	// that it is encoded as that special token (see datasets.SepFor).
	Sep string
	// BothDirections also emits (u_{i+1}, u_i) after every single-utterance
	// pair (u_i, u_{i+1}). The paper does not: Figure 2 lists only forward
	// pairs, and Appendix A.1's 892,835 pairs are fewer than the 1,287,445
	// forward pairs of its 1,388,152 utterances in 100,707 dialogues, so
	// there is no room for a reverse copy. Its loss (eq. 3) already takes
	// each side of a pair as the anchor, which makes the reverse pair a
	// duplicate: same loss, and a false negative if both share a batch.
	BothDirections bool
	// QueryCut is how a k-1 query (k > 1) is fitted to its token budget
	// where the pairs are tokenised (TokenizePairs, PairOptions.Fit); ""
	// means QueryCutWords.
	QueryCut QueryCut
}

// variantWindows maps a variant to the query lengths (in utterances) it uses.
var variantWindows = map[string][]int{
	VariantDSE:    {1},
	VariantDSE21:  {2},
	VariantDSE31:  {3},
	VariantDSE123: {1, 2, 3},
}

// Normalized returns the options with their defaults filled in, so two
// spellings of the same setting build, and cache, the same pairs.
func (o PairOptions) Normalized() PairOptions {
	if o.Variant == "" {
		o.Variant = VariantDSE
	}
	if o.Sep == "" {
		o.Sep = DefaultSep
	}
	if o.MinWords < 0 {
		o.MinWords = -1 // every negative value keeps empty utterances alike
	}
	if o.QueryCut == "" {
		o.QueryCut = QueryCutWords
	}
	return o
}

// Validate reports an unknown variant.
func (o PairOptions) Validate() error {
	o = o.Normalized()
	if _, ok := variantWindows[o.Variant]; !ok && o.Variant != VariantDropout {
		return fmt.Errorf("pair options: unknown variant %q (want %s, %s, %s, %s or %s)", o.Variant,
			VariantDSE, VariantDSE21, VariantDSE31, VariantDSE123, VariantDropout)
	}
	if _, err := ParseQueryCut(string(o.QueryCut)); err != nil {
		return fmt.Errorf("pair options: %w", err)
	}
	return nil
}

// MaxQueryUtterances is the most utterances one query of the variant
// joins: 3 for dse3-1 and dse123-1, 1 for dse and dropout. Such a query is
// given that many times the token budget (TokenizePairs).
func (o PairOptions) MaxQueryUtterances() int {
	return max(1, slices.Max(append([]int{1}, variantWindows[o.Normalized().Variant]...)))
}

// Key is the options in a pair cache's key (datasets.CacheKey), with their defaults filled in; it reports
// an unknown variant or query cut.
func (o PairOptions) Key() (datasets.PairKey, error) {
	if err := o.Validate(); err != nil {
		return datasets.PairKey{}, err
	}
	n := o.Normalized()
	k := datasets.PairKey{Variant: n.Variant, MinWords: n.MinWords, Sep: n.Sep, BothDirections: n.BothDirections}
	if n.MaxQueryUtterances() > 1 {
		k.QueryCut = string(n.QueryCut) // caches written before the setting hold tokens_left queries
	}
	return k, nil
}

// DSEPairs builds the positive pairs of opt.Variant from the dialogues.
//
// Pairs come in a fixed order: dialogue by dialogue as given; within one,
// for dse123-1 the 1-1 pairs, then 2-1, then 3-1; within those by the
// position of the response. datasets.Shuffle or datasets.Order them for
// training.
//
// Choices the paper leaves open:
//   - Utterances are the turns as given, trimmed of surrounding space
//     (footnote 1 calls all sentences of one turn an utterance; merging
//     turns is the corpus reader's business).
//   - The word filter of Appendix A.1 applies to every utterance of a pair,
//     those joined into a query included; a dropped utterance breaks the
//     chain, so its neighbours are not paired with each other (they are not
//     consecutive).
//   - A k-1 query is (u_i Sep … Sep u_{i+k-1}) and its response u_{i+k},
//     forward only (§4.4); BothDirections reverses 1-1 pairs only. §4.4
//     joins with [SEP] (the authors' released code builds 1-1 pairs only,
//     data/process_pretrain.py generate_single_vs_single, so the paper's
//     words are all there is on the join). Its token budget and its cut
//     (opt.QueryCut) are applied where it is tokenised (TokenizePairs).
//   - dropout keeps each distinct utterance text once over all dialogues
//     (A.1 counts 879,185 "unique sentences"); Dialogue and Corpus are
//     those of its first occurrence.
func DSEPairs(ds []datasets.Dialogue, opt PairOptions) ([]datasets.Pair, error) {
	b, err := NewPairBuilder(opt)
	if err != nil {
		return nil, err
	}
	var out []datasets.Pair
	for _, d := range ds {
		out = b.Add(out, d)
	}
	return out, nil
}

// PairBuilder builds DSEPairs' pairs from dialogues given one at a time, so that a stream of dialogues
// (a cache build, a count) never holds more than one: the pairs of a windowed variant come from their
// dialogue alone (§3.1, §4.4: consecutive utterances of one dialogue); dropout, which keeps each distinct
// utterance once over all dialogues, remembers a 128-bit digest of each text it kept (Appendix A.1's
// "unique sentences").
type PairBuilder struct {
	opt     PairOptions
	windows []int
	seen    map[[16]byte]struct{} // dropout only
}

// NewPairBuilder builds the pairs of opt.
func NewPairBuilder(opt PairOptions) (*PairBuilder, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt = opt.Normalized()
	b := &PairBuilder{opt: opt, windows: variantWindows[opt.Variant]}
	if opt.Variant == VariantDropout {
		b.seen = map[[16]byte]struct{}{}
	}
	return b, nil
}

// Add appends the pairs of d, after those of the dialogues added before it, to out.
func (b *PairBuilder) Add(out []datasets.Pair, d datasets.Dialogue) []datasets.Pair {
	if b.seen != nil {
		return b.appendDropout(out, d)
	}
	utts, ok := utterances(d, b.opt.MinWords)
	for _, k := range b.windows {
		out = appendWindowPairs(out, d, utts, ok, k, b.opt)
	}
	return out
}

// utterances returns the trimmed turn texts and whether each passes the
// word filter.
func utterances(d datasets.Dialogue, minWords int) ([]string, []bool) {
	utts := make([]string, len(d.Turns))
	ok := make([]bool, len(d.Turns))
	for i, t := range d.Turns {
		utts[i] = strings.TrimSpace(t.Text)
		ok[i] = datasets.WordCount(utts[i]) > minWords
	}
	return utts, ok
}

// appendWindowPairs adds the k-1 pairs of one dialogue.
func appendWindowPairs(out []datasets.Pair, d datasets.Dialogue, utts []string, ok []bool, k int, opt PairOptions) []datasets.Pair {
	run := 0 // consecutive utterances that passed the filter, ending at r-1
	for r := range utts {
		if run >= k && ok[r] {
			q := strings.Join(utts[r-k:r], opt.Sep)
			p := datasets.Pair{Query: q, Response: utts[r], Dialogue: d.ID, Corpus: d.Corpus, QueryUtterances: k}
			out = append(out, p)
			if k == 1 && opt.BothDirections {
				out = append(out, datasets.Pair{Query: utts[r], Response: q, Dialogue: d.ID, Corpus: d.Corpus, QueryUtterances: 1})
			}
		}
		if ok[r] {
			run++
		} else {
			run = 0
		}
	}
	return out
}

// appendDropout pairs each utterance of d not seen before with itself.
func (b *PairBuilder) appendDropout(out []datasets.Pair, d datasets.Dialogue) []datasets.Pair {
	for _, t := range d.Turns {
		u := strings.TrimSpace(t.Text)
		if datasets.WordCount(u) <= b.opt.MinWords {
			continue
		}
		sum := sha256.Sum256([]byte(u))
		key := [16]byte(sum[:16])
		if _, ok := b.seen[key]; ok {
			continue
		}
		b.seen[key] = struct{}{}
		out = append(out, datasets.Pair{Query: u, Response: u, Dialogue: d.ID, Corpus: d.Corpus, QueryUtterances: 1})
	}
	return out
}
