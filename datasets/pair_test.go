package datasets

import (
	"strings"
	"testing"
)

// nextPairer is the cache tests' stand-in for an objective's construction: each utterance (a trimmed turn
// of more than minWords words) with the next one of its dialogue; dedup also pairs every distinct text with
// itself, once over all dialogues, so that a Pairer that remembers what it saw is exercised too.
type nextPairer struct {
	minWords int
	dedup    bool
	seen     map[string]bool
}

func newNextPairer(minWords int, dedup bool) func() (Pairer, error) {
	return func() (Pairer, error) {
		return &nextPairer{minWords: minWords, dedup: dedup, seen: map[string]bool{}}, nil
	}
}

func (p *nextPairer) Add(out []Pair, d Dialogue) []Pair {
	prev := ""
	for _, t := range d.Turns {
		u := strings.TrimSpace(t.Text)
		if WordCount(u) <= p.minWords {
			prev = ""
			continue
		}
		if p.dedup && !p.seen[u] {
			p.seen[u] = true
			out = append(out, Pair{Query: u, Response: u, Dialogue: d.ID, Corpus: d.Corpus, QueryUtterances: 1})
		}
		if !p.dedup && prev != "" {
			out = append(out, Pair{Query: prev, Response: u, Dialogue: d.ID, Corpus: d.Corpus, QueryUtterances: 1})
		}
		prev = u
	}
	return out
}

// nextPairs is the pairs of nextPairer over ds.
func nextPairs(t testing.TB, ds []Dialogue, minWords int, dedup bool) []Pair {
	t.Helper()
	p, _ := newNextPairer(minWords, dedup)()
	var out []Pair
	for _, d := range ds {
		out = p.Add(out, d)
	}
	if len(out) == 0 {
		t.Fatal("no pairs")
	}
	return out
}

// nextKey is the key of nextPairer's pairs.
func nextKey(minWords int, dedup bool) PairKey {
	k := PairKey{Variant: "next", MinWords: minWords, Sep: " [SEP] "}
	if dedup {
		k.Variant = "dedup"
	}
	return k
}

// edgeDialogue has surrounding space, a short turn and an empty one.
func edgeDialogue() Dialogue {
	return Dialogue{ID: "edge", Corpus: "toy2", Turns: []Turn{{User, "  Any   Korean food nearby tonight?\n"}, {System, "ok"},
		{User, "Sorry, there is no Korean restaurant."}, {System, "Korean food, please, thank you."}, {User, ""}}}
}

func TestWordCount(t *testing.T) {
	for _, s := range []string{"", " ", "a", " a  b\tc\n", "Domino's is a good place", "a\u00a0b\u3000c\u0085d", "x\u200by"} {
		if got, want := WordCount(s), len(strings.Fields(s)); got != want {
			t.Errorf("WordCount(%q) = %d, want %d", s, got, want)
		}
	}
}
