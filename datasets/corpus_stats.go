package datasets

import "strings"

// Stats counts what a set of dialogues holds; words are white-space separated.
type Stats struct {
	Dialogues, Turns, Words int
}

// Count returns the Stats of ds.
func Count(ds []Dialogue) Stats {
	s := Stats{Dialogues: len(ds)}
	for _, d := range ds {
		s.Turns += len(d.Turns)
		for _, t := range d.Turns {
			s.Words += len(strings.Fields(t.Text))
		}
	}
	return s
}

// Add returns the sum of two Stats.
func (s Stats) Add(o Stats) Stats {
	return Stats{Dialogues: s.Dialogues + o.Dialogues, Turns: s.Turns + o.Turns, Words: s.Words + o.Words}
}
