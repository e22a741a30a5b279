package evaluate

import "fmt"

// SRList is one semantic-retrieval query and the candidates the model re-ranks: pool rows in BM25 order, each
// positive when its label is the query's.
type SRList struct {
	Query    int    `json:"query"`
	Rows     []int  `json:"rows"`
	Positive []bool `json:"positive"`
}

// Positives counts the list's positive candidates.
func (l SRList) Positives() int {
	n := 0
	for _, p := range l.Positive {
		if p {
			n++
		}
	}
	return n
}

// SRSampling says how semantic-retrieval lists are made: Queries per seed, Size candidates per query, at most
// MaxPositives of them positive.
type SRSampling struct {
	Queries, Size, MaxPositives int
}

// DefaultSRSampling is DialogueCSE §5.1.2's: 100 BM25 candidates per query, at most 30 positive; 2,000
// queries per seed is ours (the paper keeps about 7k samples for MDC, from a pool whose size it does not give).
var DefaultSRSampling = SRSampling{Queries: 2000, Size: 100, MaxPositives: 30}

// srStream is the second PCG seed word of semantic retrieval's query draws ("convrep4").
const srStream = 0x636f6e7672657034

// SRLists draws one seed's queries and builds their lists (DialogueCSE §5.1.2, steps 1 and 3):
//
//   - the queries are min(Queries, pool size) pool rows drawn with draw(newRNG(seed, srStream), n, m), in
//     draw order;
//   - each query's candidates are the first Size pool rows in BM25 order (score of the query against the row,
//     highest first, ties to the lower row; rows sharing no term with the query are never retrieved), the
//     query's own row left out, where positives past the MaxPositives-th are passed over ("We limit the
//     number of positive samples to a maximum of 30"; the list is filled with the next negatives rather than
//     cut short, so that every list holds Size candidates when the pool has them);
//   - a query with no positive among its candidates is dropped, and counted.
//
// index must be the BM25 index of pool.Texts.
func SRLists(pool *SRPool, index *BM25, sp SRSampling, seed uint64) (lists []SRList, dropped int, err error) {
	if sp.Queries < 1 || sp.Size < 1 || sp.MaxPositives < 1 {
		return nil, 0, fmt.Errorf("semantic retrieval: %d queries, %d candidates, %d positives at most: want at least 1 each", sp.Queries, sp.Size, sp.MaxPositives)
	}
	n := len(pool.Texts)
	g := newRNG(seed, srStream)
	for _, q := range draw(g, n, min(sp.Queries, n)) {
		l := srCandidates(index.Score(pool.Texts[q]), q, pool.Labels, sp.Size, sp.MaxPositives)
		if l.Positives() == 0 {
			dropped++
			continue
		}
		lists = append(lists, l)
	}
	return lists, dropped, nil
}

// srCandidates builds query's list from its BM25 hits (see SRLists): the first size hits, best first, of the
// best maxPositive positive hits and all the negative ones.
func srCandidates(hits []Scored, query int, labels []string, size, maxPositive int) SRList {
	positive := func(h Scored) bool { return labels[h.Doc] == labels[query] }
	pos := bestHits(hits, maxPositive, func(h Scored) bool { return h.Doc != query && positive(h) })
	neg := bestHits(hits, size, func(h Scored) bool { return h.Doc != query && !positive(h) })
	l := SRList{Query: query}
	for len(l.Rows) < size && (len(pos) > 0 || len(neg) > 0) {
		var h Scored
		if len(neg) == 0 || len(pos) > 0 && better(pos[0], neg[0]) {
			h, pos = pos[0], pos[1:]
		} else {
			h, neg = neg[0], neg[1:]
		}
		l.Rows = append(l.Rows, h.Doc)
		l.Positive = append(l.Positive, positive(h))
	}
	return l
}

// better orders hits: the higher score first, ties to the lower document.
func better(a, b Scored) bool {
	return a.Score > b.Score || a.Score == b.Score && a.Doc < b.Doc
}

// bestHits returns the k best hits that keep accepts, best first, by insertion into a list of at most k: a
// hit is inserted only when it beats the list's last, so that a pool of ~20k hits costs little for k = 100.
func bestHits(hits []Scored, k int, keep func(Scored) bool) []Scored {
	top := make([]Scored, 0, k+1)
	for _, h := range hits {
		if !keep(h) || len(top) == k && !better(h, top[k-1]) {
			continue
		}
		i := len(top)
		for i > 0 && better(h, top[i-1]) {
			i--
		}
		top = append(top, Scored{})
		copy(top[i+1:], top[i:])
		top[i] = h
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}
