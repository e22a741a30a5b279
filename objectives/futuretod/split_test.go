package futuretod

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"convrep/objectives/mlm"
)

func TestSplitDialogue(t *testing.T) {
	const U, S = true, false
	for _, tc := range []struct {
		name  string
		user  []bool
		p     FutureLength
		cuts  []int // the context lengths that may be drawn
		maxF  func(c int) int
		fixed bool // f is always the whole rest
	}{
		// U1 S1 U2 S2 U3 S3: the context ends with a user turn, C = {U1..Ut}, so c ∈ {1, 3, 5}.
		{"all", []bool{U, S, U, S, U, S}, FutureLength{}, []int{1, 3, 5}, func(c int) int { return 6 - c }, false},
		{"P=1", []bool{U, S, U, S, U, S}, FutureLength{Max: 1}, []int{1, 3, 5}, func(int) int { return 1 }, false},
		{"P=3", []bool{U, S, U, S, U, S}, FutureLength{Max: 3}, []int{1, 3, 5}, func(c int) int { return min(3, 6-c) }, false},
		{"fix", []bool{U, S, U, S, U, S}, FutureLength{Fix: true}, []int{1, 3, 5}, func(c int) int { return 6 - c }, true},
		// Footnote 7: a P beyond the future left means any length of it.
		{"P beyond the future", []bool{U, S}, FutureLength{Max: 5}, []int{1}, func(int) int { return 1 }, false},
		// A system opening and two user turns in a row: cuts after each user turn that has a successor.
		{"system first", []bool{S, U, U, S}, FutureLength{}, []int{2, 3}, func(c int) int { return 4 - c }, false},
		// No user turn to end a context with: any cut.
		{"system only", []bool{S, S, S}, FutureLength{}, []int{1, 2}, func(c int) int { return 3 - c }, false},
		// The last turn is the only user turn: nothing follows it, so any cut.
		{"user last", []bool{S, S, U}, FutureLength{}, []int{1, 2}, func(c int) int { return 3 - c }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := rand.New(rand.NewPCG(3, 4))
			seen := map[[2]int]int{}
			for range 4000 {
				c, f, ok := SplitDialogue(tc.user, tc.p, g)
				if !ok {
					t.Fatal("no split of a dialogue of two utterances or more")
				}
				seen[[2]int{c, f}]++
			}
			// Every (c, f) drawn is allowed, and every allowed one is drawn.
			want := map[[2]int]bool{}
			for _, c := range tc.cuts {
				for f := 1; f <= tc.maxF(c); f++ {
					if !tc.fixed || f == tc.maxF(c) {
						want[[2]int{c, f}] = true
					}
				}
			}
			for cf := range seen {
				if !want[cf] {
					t.Errorf("drew context %d, future %d: not allowed (allowed %v)", cf[0], cf[1], splitKeys(want))
				}
			}
			for cf := range want {
				if seen[cf] == 0 {
					t.Errorf("never drew context %d, future %d in 4000 draws", cf[0], cf[1])
				}
			}
		})
	}
	for _, user := range [][]bool{nil, {U}} {
		if _, _, ok := SplitDialogue(user, FutureLength{}, rand.New(rand.NewPCG(1, 1))); ok {
			t.Errorf("a dialogue of %d utterances was split", len(user))
		}
	}
}

// The split depends only on the random source: the same (seed, epoch, example) gives the same split.
func TestSplitDialogueRepeats(t *testing.T) {
	user := []bool{true, false, true, false, true, false, true, false}
	draw := func(epoch, example int) string {
		g := mlm.ExampleRand(42, epoch, example)
		c, f, _ := SplitDialogue(user, FutureLength{Max: 3}, g)
		return fmt.Sprint(c, f)
	}
	if first, again := draw(2, 17), draw(2, 17); first != again {
		t.Fatal("the same (seed, epoch, example) drew two splits")
	}
	differ := false
	for e := 0; e < 10 && !differ; e++ {
		differ = draw(e, 17) != draw(e+1, 17)
	}
	if !differ {
		t.Fatal("eleven epochs drew the same split: the epoch does not reach the random source")
	}
}

func splitKeys(m map[[2]int]bool) []string {
	var out []string
	for k := range m {
		out = append(out, fmt.Sprint(k))
	}
	return out
}
