package datasets

// CountOne is Count of a single dialogue, for counting a stream.
func CountOne(d Dialogue) Stats {
	s := Stats{Dialogues: 1, Turns: len(d.Turns)}
	for _, t := range d.Turns {
		s.Words += WordCount(t.Text)
	}
	return s
}

// PairCounter counts the pairs a Pairer builds from dialogues given one at a time, without holding them.
type PairCounter struct {
	p   Pairer
	buf []Pair
}

// NewPairCounter counts the pairs of p.
func NewPairCounter(p Pairer) *PairCounter { return &PairCounter{p: p} }

// Add returns the number of pairs d adds after the dialogues added before it.
func (c *PairCounter) Add(d Dialogue) int {
	c.buf = c.p.Add(c.buf[:0], d)
	return len(c.buf)
}
