package tokenizers

import (
	"container/heap"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/sugarme/tokenizer"
)

// bpeModel is a byte-level BPE model with HuggingFace's slow-tokenizer merge
// order: repeatedly take the lowest-ranked pair present and merge all its
// occurrences left to right before looking again. sugarme's BPE orders
// merges differently (" 577786" → "Ġ57 77 86" instead of "Ġ5 77 786"), so
// this model replaces it behind the library's tokenizer.Model interface.
type bpeModel struct {
	vocab  map[string]int
	tokens []string // id → token
	merges [][2]string
	unk    string // "" when the vocabulary has none

	syms  []string         // interned symbols: merge parts and results
	symID map[string]int32 // inverse of syms
	ranks map[[2]int32]bpeMerge

	mu    sync.RWMutex
	cache map[string][]int32 // word → token ids; bounded, reset when full
}

// Words up to bpeCacheWord bytes are cached, at most bpeCacheMax of them.
const (
	bpeCacheWord = 64
	bpeCacheMax  = 1 << 16
)

type bpeMerge struct{ rank, result int32 }

var _ tokenizer.Model = (*bpeModel)(nil)

// newBPEModel builds the model. vocab ids must be 0..len(vocab)-1; later
// duplicates of a merge override earlier ones, as in HF's dict of ranks.
func newBPEModel(vocab map[string]int, merges [][2]string, unk string) (*bpeModel, error) {
	tokens := make([]string, len(vocab))
	seen := make([]bool, len(vocab))
	for tok, id := range vocab {
		if id < 0 || id >= len(vocab) || seen[id] {
			return nil, fmt.Errorf("bpe vocabulary: id %d of %q is duplicated or outside 0..%d", id, tok, len(vocab)-1)
		}
		seen[id] = true
		tokens[id] = tok
	}
	m := &bpeModel{
		vocab: vocab, tokens: tokens, unk: unk,
		symID: make(map[string]int32, 2*len(merges)),
		ranks: make(map[[2]int32]bpeMerge, len(merges)),
		cache: make(map[string][]int32),
	}
	// Later duplicates win, then ranks are renumbered densely so that Save
	// writes a file that reloads to the same order.
	last := make(map[[2]string]int, len(merges))
	for i, p := range merges {
		last[p] = i
	}
	for i, p := range merges {
		if last[p] != i {
			continue
		}
		rank := int32(len(m.merges))
		m.merges = append(m.merges, p)
		key := [2]int32{m.intern(p[0]), m.intern(p[1])}
		m.ranks[key] = bpeMerge{rank: rank, result: m.intern(p[0] + p[1])}
	}
	return m, nil
}

func (m *bpeModel) intern(s string) int32 {
	if id, ok := m.symID[s]; ok {
		return id
	}
	id := int32(len(m.syms))
	m.syms = append(m.syms, s)
	m.symID[s] = id
	return id
}

// wordIDs returns the token ids of one byte-level word (the cache owns the
// returned slice).
func (m *bpeModel) wordIDs(word string) ([]int32, error) {
	m.mu.RLock()
	ids, ok := m.cache[word]
	m.mu.RUnlock()
	if ok {
		return ids, nil
	}
	pieces := m.merge(word)
	ids = make([]int32, len(pieces))
	for i, p := range pieces {
		id, ok := m.vocab[p]
		if !ok {
			if id, ok = m.vocab[m.unk]; !ok || m.unk == "" {
				return nil, fmt.Errorf("bpe: piece %q is not in the vocabulary and there is no unknown token", p)
			}
		}
		ids[i] = int32(id)
	}
	if len(word) <= bpeCacheWord {
		m.mu.Lock()
		if len(m.cache) >= bpeCacheMax {
			clear(m.cache)
		}
		m.cache[word] = ids
		m.mu.Unlock()
	}
	return ids, nil
}

// merge splits word into characters and applies the merges. Pairs are
// taken from a heap ordered by (rank, position); all occurrences of one
// rank are merged before the pairs they create are queued, which is what
// HF's "merge every occurrence of the best pair, then recount" does.
func (m *bpeModel) merge(word string) []string {
	n := utf8.RuneCountInString(word)
	if n <= 1 {
		if n == 0 {
			return nil
		}
		return []string{word}
	}
	w := bpeWord{
		sym:  make([]int32, 0, n),
		str:  make([]string, 0, n),
		next: make([]int32, n),
		prev: make([]int32, n),
	}
	for i, r := range word {
		s := word[i : i+utf8.RuneLen(r)]
		id, ok := m.symID[s]
		if !ok {
			id = -1 // takes part in no merge
		}
		w.sym = append(w.sym, id)
		w.str = append(w.str, s)
	}
	for i := range w.next {
		w.next[i] = int32(i + 1)
		w.prev[i] = int32(i - 1)
	}
	w.next[n-1] = -1
	for i := 0; i+1 < n; i++ {
		w.push(m, int32(i))
	}
	var pending []int32
	for w.h.Len() > 0 {
		e := heap.Pop(&w.h).(bpeEntry)
		if !w.valid(e) {
			continue
		}
		pending = w.apply(m, e, pending[:0])
		for w.h.Len() > 0 && w.h[0].rank == e.rank {
			if f := heap.Pop(&w.h).(bpeEntry); w.valid(f) {
				pending = w.apply(m, f, pending)
			}
		}
		for _, pos := range pending {
			if w.sym[pos] != -2 {
				w.push(m, pos)
			}
		}
	}
	var out []string
	for i := int32(0); i != -1; i = w.next[i] {
		out = append(out, w.str[i])
	}
	return out
}

// bpeWord is a word being merged: a linked list of symbols over the
// original character positions; sym -2 marks a position merged away.
type bpeWord struct {
	sym        []int32
	str        []string
	next, prev []int32
	h          bpeHeap
}

type bpeEntry struct{ rank, pos, left, right, result int32 }

func (w *bpeWord) push(m *bpeModel, pos int32) {
	nx := w.next[pos]
	if nx < 0 || w.sym[pos] < 0 || w.sym[nx] < 0 {
		return
	}
	mg, ok := m.ranks[[2]int32{w.sym[pos], w.sym[nx]}]
	if !ok {
		return
	}
	heap.Push(&w.h, bpeEntry{rank: mg.rank, pos: pos, left: w.sym[pos], right: w.sym[nx], result: mg.result})
}

// valid reports whether the pair e was queued for is still there.
func (w *bpeWord) valid(e bpeEntry) bool {
	nx := w.next[e.pos]
	return w.sym[e.pos] == e.left && nx >= 0 && w.sym[nx] == e.right
}

// apply merges the pair at e.pos and records the positions whose pair
// with their right neighbour is new.
func (w *bpeWord) apply(m *bpeModel, e bpeEntry, pending []int32) []int32 {
	nx := w.next[e.pos]
	w.sym[e.pos] = e.result
	w.str[e.pos] = m.syms[e.result]
	w.sym[nx] = -2
	w.next[e.pos] = w.next[nx]
	if w.next[nx] >= 0 {
		w.prev[w.next[nx]] = e.pos
	}
	if p := w.prev[e.pos]; p >= 0 {
		pending = append(pending, p)
	}
	return append(pending, e.pos)
}

type bpeHeap []bpeEntry

func (h bpeHeap) Len() int { return len(h) }
func (h bpeHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}
func (h bpeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *bpeHeap) Push(x any)   { *h = append(*h, x.(bpeEntry)) }
func (h *bpeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// tokenizer.Model implementation, so the model also plugs into sugarme's
// pipeline. Offsets are in bytes of the byte-level sequence.

// Tokenize splits one byte-level word into tokens.
func (m *bpeModel) Tokenize(sequence string) ([]tokenizer.Token, error) {
	pieces := m.merge(sequence)
	out := make([]tokenizer.Token, 0, len(pieces))
	off := 0
	for _, p := range pieces {
		id, ok := m.vocab[p]
		if !ok {
			if id, ok = m.vocab[m.unk]; !ok || m.unk == "" {
				return nil, fmt.Errorf("bpe: piece %q is not in the vocabulary and there is no unknown token", p)
			}
		}
		out = append(out, tokenizer.Token{Id: id, Value: p, Offsets: []int{off, off + len(p)}})
		off += len(p)
	}
	return out, nil
}

// TokenToId returns the id of token.
func (m *bpeModel) TokenToId(token string) (int, bool) {
	id, ok := m.vocab[token]
	return id, ok
}

// IdToToken returns the token of id.
func (m *bpeModel) IdToToken(id int) (string, bool) {
	if id < 0 || id >= len(m.tokens) {
		return "", false
	}
	return m.tokens[id], true
}

// GetVocab returns the vocabulary (shared, not a copy).
func (m *bpeModel) GetVocab() map[string]int { return m.vocab }

// GetVocabSize returns the number of vocabulary entries.
func (m *bpeModel) GetVocabSize() int { return len(m.vocab) }

// Save is not used: Tokenizer.Save writes HF's layout itself.
func (m *bpeModel) Save(string, ...string) error {
	return errors.New("bpe model: use Tokenizer.Save")
}
