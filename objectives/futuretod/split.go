package futuretod

import (
	"fmt"
	"math/rand/v2"
)

// FutureLength is FutureTOD's maximum future length P (§4.1, "Effect of Max Future Length").
type FutureLength struct {
	Max int  // P: at most this many future utterances; 0 means "all" (any length up to the whole future)
	Fix bool // the paper's "P = Fix" baseline: always the whole future
}

// String spells the setting as the [objective] table does.
func (f FutureLength) String() string {
	switch {
	case f.Fix:
		return "fix"
	case f.Max == 0:
		return "all"
	}
	return fmt.Sprint(f.Max)
}

// SplitDialogue draws FutureTOD's split of one dialogue (§2.2): a turn t at which the dialogue is cut into
// the context C = {U1, S1, ..., Ut} and the future F = {St, Ut+1, ..., Sn}, then a random number of future
// utterances from 1 up to P (fewer when F is shorter: footnote 7). user[i] says whether utterance i is the
// user's. It returns the number of context utterances c ≥ 1 and of future utterances f ≥ 1: the student
// encodes utterances [0, c), the teacher [0, c+f). The context ends with a user utterance, as C ends with
// Ut, wherever the dialogue allows one; a dialogue with no user utterance followed by another utterance is
// cut after any utterance. A dialogue of fewer than two utterances has no future: ok is false.
func SplitDialogue(user []bool, p FutureLength, g *rand.Rand) (c, f int, ok bool) {
	n := len(user)
	if n < 2 {
		return 0, 0, false
	}
	var cuts []int // candidate context lengths
	for i := 1; i < n; i++ {
		if user[i-1] {
			cuts = append(cuts, i)
		}
	}
	if len(cuts) == 0 {
		for i := 1; i < n; i++ {
			cuts = append(cuts, i)
		}
	}
	c = cuts[g.IntN(len(cuts))]
	rest := n - c
	switch {
	case p.Fix:
		f = rest
	case p.Max == 0 || p.Max >= rest:
		f = 1 + g.IntN(rest)
	default:
		f = 1 + g.IntN(p.Max)
	}
	return c, f, true
}
