package evaluate

import (
	"maps"
	"slices"
)

// SRPool is the candidate pool of semantic retrieval: distinct texts with their intent labels, in order of
// first appearance. Queries are drawn from it, and each query's candidates are the others.
type SRPool struct {
	Dataset string // the name in the result rows: msr_e2e
	Source  string // what was read, recorded in the rows' settings
	Texts   []string
	Labels  []string
	// What building the pool left out, for the notes: user messages read; of them, those under MinSRWords
	// words and those without acts; repeats of a kept text; and distinct texts dropped because their copies
	// disagree on the label.
	Messages, Short, Unlabelled, Repeats, Conflicting int
}

// MinSRWords is the fewest white-space separated words a candidate has: shorter messages ("yes", "thank
// you") say too little to retrieve by.
const MinSRWords = 3

// SRLabelStats summarises a pool's labels.
type SRLabelStats struct {
	Labels     int     // distinct labels
	Singletons int     // labels with one text: such a query has no positive
	Largest    string  // the label with the most texts (the first such in sorted order)
	Share      float64 // its share of the pool
}

// LabelStats counts p's labels.
func (p *SRPool) LabelStats() SRLabelStats {
	count := map[string]int{}
	for _, l := range p.Labels {
		count[l]++
	}
	var st SRLabelStats
	st.Labels = len(count)
	best := 0
	for _, l := range slices.Sorted(maps.Keys(count)) {
		if count[l] == 1 {
			st.Singletons++
		}
		if count[l] > best {
			best, st.Largest = count[l], l
		}
	}
	if len(p.Labels) > 0 {
		st.Share = float64(best) / float64(len(p.Labels))
	}
	return st
}
