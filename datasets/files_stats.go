package datasets

import (
	"crypto/sha256"
	"strings"
)

// CountOne is Count of a single dialogue, for counting a stream.
func CountOne(d Dialogue) Stats {
	s := Stats{Dialogues: 1, Turns: len(d.Turns)}
	for _, t := range d.Turns {
		s.Words += wordCount(t.Text)
	}
	return s
}

// PairCounter counts the pairs DSEPairs builds from dialogues given one at a time, without holding them: a
// windowed variant's pairs come from one dialogue each; dropout keeps each distinct utterance once over
// all dialogues, which the counter tells apart by a 128-bit digest of the text.
type PairCounter struct {
	opt  PairOptions
	seen map[[16]byte]struct{}
}

// NewPairCounter counts the pairs of opt.
func NewPairCounter(opt PairOptions) (*PairCounter, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt = opt.Normalized()
	c := &PairCounter{opt: opt}
	if opt.Variant == VariantDropout {
		c.seen = map[[16]byte]struct{}{}
	}
	return c, nil
}

// Add returns the number of pairs d adds after the dialogues added before it.
func (c *PairCounter) Add(d Dialogue) int {
	if c.seen == nil {
		ps, _ := DSEPairs([]Dialogue{d}, c.opt) // the options were validated
		return len(ps)
	}
	n := 0
	for _, t := range d.Turns {
		u := strings.TrimSpace(t.Text)
		if wordCount(u) <= c.opt.MinWords {
			continue
		}
		var k [16]byte
		sum := sha256.Sum256([]byte(u))
		copy(k[:], sum[:])
		if _, ok := c.seen[k]; ok {
			continue
		}
		c.seen[k] = struct{}{}
		n++
	}
	return n
}
