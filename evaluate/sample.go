package evaluate

import (
	"fmt"
	"math/rand/v2"
)

// Stream constants: the second PCG seed word, one per kind of draw, so that support sets and candidate lists
// drawn with the same seed are independent.
const (
	supportStream   = 0x636f6e7672657031 // "convrep1"
	candidateStream = 0x636f6e7672657032 // "convrep2"
)

// newRNG returns the generator for one seed and stream: Go's math/rand/v2 PCG (128-bit LCG with the DXSM
// output function) created as rand.NewPCG(seed, stream).
func newRNG(seed, stream uint64) *rand.PCG { return rand.NewPCG(seed, stream) }

// Draw returns m distinct positions of 0..n-1 drawn with seed from the random stream, by the rule of draw: the
// evaluation sets draw their own few-shot examples with it (sets.ActSet.FewShot).
func Draw(seed, stream uint64, n, m int) []int { return draw(newRNG(seed, stream), n, m) }

// draw returns m distinct positions of 0..n-1 by a partial Fisher-Yates shuffle: start from the identity,
// and for i = 0..m-1 swap position i with i + (Uint64() mod (n-i)). The modulo keeps the rule simple for
// other tools to reproduce; its bias is below n/2^64.
func draw(g *rand.PCG, n, m int) []int {
	// The permutation is kept sparse (only swapped positions) so that drawing 99 of 13k rows costs 99 steps.
	moved := map[int]int{}
	at := func(i int) int {
		if v, ok := moved[i]; ok {
			return v
		}
		return i
	}
	out := make([]int, m)
	for i := 0; i < m; i++ {
		j := i + int(g.Uint64()%uint64(n-i))
		out[i] = at(j)
		moved[j] = at(i)
	}
	return out
}

// Support is the sampled support set of one label: row indices into the training split.
type Support struct {
	Label string `json:"label"`
	Rows  []int  `json:"rows"`
}

// SampleSupport draws the k-shot support sets from train, as DSE does (§4.2.1: few-shot train and validation
// sets drawn per seed from the training data; here up to k rows each, the support set being the train half).
// One generator is made per call, newRNG(seed, supportStream). For each label in order of first appearance in
// train, the label's rows (in file order, n of them) are drawn from with draw(g, n, min(2k, n)), and the first
// min(k, n) of the drawn rows are kept, in draw order. A label with at least 2k rows (every label of the
// papers' sets at their shot counts) keeps k of 2k drawn; one with k to 2k-1 rows still keeps k; only a label
// with fewer than k rows keeps fewer: all it has (Shortfall lists those, UsedShots counts what each label got).
// An earlier rule kept ceil(m/2) of the m drawn; both draw the same m rows from the same stream, so on the
// papers' sets the support sets, and the figures pinned from them, are unchanged.
func SampleSupport(train Split, k int, seed uint64) ([]Support, error) {
	if k < 1 {
		return nil, fmt.Errorf("sample support: k = %d, want at least 1", k)
	}
	if len(train) == 0 {
		return nil, fmt.Errorf("sample support: the training split is empty")
	}
	byLabel := map[string][]int{}
	for i, e := range train {
		byLabel[e.Label] = append(byLabel[e.Label], i)
	}
	g := newRNG(seed, supportStream)
	var out []Support
	for _, label := range train.Labels() {
		rows := byLabel[label]
		m := min(2*k, len(rows))
		picked := draw(g, len(rows), m)
		keep := make([]int, min(k, m))
		for i := range keep {
			keep[i] = rows[picked[i]]
		}
		out = append(out, Support{Label: label, Rows: keep})
	}
	return out, nil
}

// CheckQueryLabels returns an error naming the first query whose label has no training example (and is not
// one of the allowed extra labels, such as OOSLabel), so that a run stops before any embedding is computed.
func CheckQueryLabels(train, queries Split, allowed ...string) error {
	known := map[string]bool{}
	for _, e := range train {
		known[e.Label] = true
	}
	for _, a := range allowed {
		known[a] = true
	}
	for i, e := range queries {
		if !known[e.Label] {
			return fmt.Errorf("query row %d: label %q has no training example", i, e.Label)
		}
	}
	return nil
}

// Candidates is one k-to-100 response-selection query: the question's row, and the rows whose answers are
// its candidates, the true answer (row Query) among them at position Answer.
type Candidates struct {
	Query  int   `json:"query"`
	Rows   []int `json:"rows"`
	Answer int   `json:"answer"`
}

// SampleCandidates builds, for every row of responses in order, a list of size candidates (100 in the papers):
// the row's own response and size-1 responses of other rows. Rows whose response text equals the query's are
// never drawn (AmazonQA repeats short answers such as "Yes", which would tie with the truth). One generator
// is made per call, newRNG(seed, candidateStream); for each query the eligible rows (in file order, n of them)
// are drawn from with draw(g, n, size-1), then the true row is inserted at position Uint64() mod size.
func SampleCandidates(responses []string, size int, seed uint64) ([]Candidates, error) {
	if size < 2 {
		return nil, fmt.Errorf("sample candidates: size %d, want at least 2", size)
	}
	same := map[string][]int{} // rows sharing an answer text, ascending
	for i, r := range responses {
		same[r] = append(same[r], i)
	}
	g := newRNG(seed, candidateStream)
	out := make([]Candidates, len(responses))
	for q, r := range responses {
		excluded := same[r]
		n := len(responses) - len(excluded)
		if n < size-1 {
			return nil, fmt.Errorf("sample candidates: query %d: only %d rows with another answer, want %d", q, n, size-1)
		}
		picked := draw(g, n, size-1)
		pos := int(g.Uint64() % uint64(size))
		rows := make([]int, 0, size)
		for _, t := range picked[:pos] {
			rows = append(rows, nthOutside(t, excluded))
		}
		rows = append(rows, q)
		for _, t := range picked[pos:] {
			rows = append(rows, nthOutside(t, excluded))
		}
		out[q] = Candidates{Query: q, Rows: rows, Answer: pos}
	}
	return out, nil
}

// nthOutside returns the t-th (0-based) row, in file order, that is not in the ascending list excluded.
func nthOutside(t int, excluded []int) int {
	r := t
	for _, e := range excluded {
		if e <= r {
			r++
		} else {
			break
		}
	}
	return r
}
