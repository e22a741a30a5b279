package datasets

// CountOne is Count of a single dialogue, for counting a stream.
func CountOne(d Dialogue) Stats {
	s := Stats{Dialogues: 1, Turns: len(d.Turns)}
	for _, t := range d.Turns {
		s.Words += wordCount(t.Text)
	}
	return s
}

// PairCounter counts the pairs DSEPairs builds from dialogues given one at a time, without holding them
// (PairBuilder).
type PairCounter struct {
	b   *PairBuilder
	buf []Pair
}

// NewPairCounter counts the pairs of opt.
func NewPairCounter(opt PairOptions) (*PairCounter, error) {
	b, err := NewPairBuilder(opt)
	if err != nil {
		return nil, err
	}
	return &PairCounter{b: b}, nil
}

// Add returns the number of pairs d adds after the dialogues added before it.
func (c *PairCounter) Add(d Dialogue) int {
	c.buf = c.b.Add(c.buf[:0], d)
	return len(c.buf)
}
