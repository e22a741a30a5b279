package settings

import "strings"

// Nearest is the candidate closest to s by edit distance (case-insensitive), for a "did you mean" hint: ok is
// false when none is close enough to be a plausible slip, at most a third of the longer name's letters apart
// (and at least one letter is allowed).
func Nearest(s string, candidates []string) (best string, ok bool) {
	bestD := -1
	for _, c := range candidates {
		d := distance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 {
		return "", false
	}
	limit := max(len(s), len(best)) / 3
	return best, bestD <= max(limit, 1)
}

// distance is the edit distance between a and b in bytes, counting an insertion, a deletion, a substitution
// and a swap of two neighbours as one edit each (optimal string alignment), in O(len(a)·len(b)) time and
// O(len(b)) memory.
func distance(a, b string) int {
	prev2 := make([]int, len(b)+1) // row i-2
	prev := make([]int, len(b)+1)  // row i-1
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
