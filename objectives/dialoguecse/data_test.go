package dialoguecse

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"convrep/objectives"

	"go.uber.org/zap"
)

// C is context_turns turns in all (§5.3, §4.2), consecutive with r, the odd one before it, shifted at the
// dialogue's ends so that it keeps its size.
func TestContextWindows(t *testing.T) {
	for _, tc := range []struct {
		n, w int
		want string // resp:context per example
	}{
		{2, 3, "[{10 [11]} {11 [10]}]"},
		{4, 5, "[{10 [11 12 13]} {11 [10 12 13]} {12 [10 11 13]} {13 [10 11 12]}]"},
		{5, 1, "[{10 [11]} {11 [10]} {12 [11]} {13 [12]} {14 [13]}]"},
		{7, 2, "[{10 [11 12]} {11 [10 12]} {12 [11 13]} {13 [12 14]} {14 [13 15]} {15 [14 16]} {16 [14 15]}]"},
		{7, 3, "[{10 [11 12 13]} {11 [10 12 13]} {12 [10 11 13]} {13 [11 12 14]} {14 [12 13 15]} {15 [13 14 16]} {16 [13 14 15]}]"},
	} {
		if got := fmt.Sprint(contextWindows(10, tc.n, tc.w)); got != tc.want {
			t.Errorf("n=%d w=%d: %s, want %s", tc.n, tc.w, got, tc.want)
		}
	}
}

// The default context is 3 turns in all (§5.3), not 3 on each side, and context_turns changes it.
func TestContextTurnsSetting(t *testing.T) {
	for _, tc := range []struct {
		set  objectives.Settings
		want int
	}{
		{objectives.Settings{}, 3},
		{objectives.Settings{"context_turns": int64(1)}, 1},
		{objectives.Settings{"context_turns": int64(5)}, 5},
	} {
		cfg, err := Parse(tc.set)
		if err != nil {
			t.Fatalf("%v: %v", tc.set, err)
		}
		if cfg.ContextTurns != tc.want {
			t.Fatalf("%v: context_turns %d, want %d", tc.set, cfg.ContextTurns, tc.want)
		}
		const n = 12
		for _, ex := range contextWindows(0, n, cfg.ContextTurns) {
			if len(ex.context) != tc.want {
				t.Errorf("%v: response %d has %d context turns %v, want %d", tc.set, ex.resp, len(ex.context), ex.context, tc.want)
			}
			// r and C are consecutive turns of the dialogue.
			turns := slices.Sorted(slices.Values(append([]int32{ex.resp}, ex.context...)))
			if turns[len(turns)-1]-turns[0] != int32(tc.want) {
				t.Errorf("%v: response %d with context %v is not a run of consecutive turns", tc.set, ex.resp, ex.context)
			}
		}
	}
}

// Negatives come from other dialogues first, never the example itself, as many as asked when the batch
// has them, and the same for the same batch (a resumed run rebuilds its batches).
func TestPickNegatives(t *testing.T) {
	// Six examples; responses 0-2 of dialogue 0, 3-4 of dialogue 1, 5 of dialogue 2.
	d := &cseExamples{dialogue: []int32{0, 0, 0, 1, 1, 2}, seed: 3}
	for r := range 6 {
		d.examples = append(d.examples, cseExample{resp: int32(r)})
	}
	for _, tc := range []struct {
		negatives int
		idx       []int
	}{
		{1, []int{0, 1, 2, 3, 4, 5}},
		{2, []int{5, 3, 0, 1, 2, 4}},
		{4, []int{0, 1, 2, 3, 4, 5}},
		{5, []int{0, 1, 2, 3, 4, 5}},
		{9, []int{0, 1, 2, 3}},
	} {
		d.negatives = tc.negatives
		got := d.pickNegatives(tc.idx)
		if again := d.pickNegatives(tc.idx); fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("negatives %d: two draws for one batch differ: %v and %v", tc.negatives, got, again)
		}
		for i, negs := range got {
			own := d.dialogue[tc.idx[i]]
			others := 0
			for j := range tc.idx {
				if d.dialogue[tc.idx[j]] != own {
					others++
				}
			}
			if want := min(tc.negatives, len(tc.idx)-1); len(negs) != want {
				t.Fatalf("negatives %d, batch %v: example %d got %v, want %d", tc.negatives, tc.idx, i, negs, want)
			}
			same := 0
			for _, j := range negs {
				if j == i || j < 0 || j >= len(tc.idx) {
					t.Fatalf("example %d got negative row %d", i, j)
				}
				if d.dialogue[tc.idx[j]] == own {
					same++
				}
			}
			// Same-dialogue responses only once the other dialogues are used up.
			if want := max(0, len(negs)-others); same != want {
				t.Fatalf("negatives %d, batch %v: example %d got %v with %d of its own dialogue, want %d", tc.negatives, tc.idx, i, negs, same, want)
			}
			if !slices.IsSorted(negs) {
				t.Fatalf("negatives %v not sorted", negs)
			}
		}
	}
	// Another batch order draws again.
	d.negatives = 1
	a, b := d.pickNegatives([]int{0, 1, 2, 3, 4, 5}), d.pickNegatives([]int{0, 1, 2, 3, 5, 4})
	draws := 0
	for s := range 20 {
		d.seed = int64(s)
		if fmt.Sprint(d.pickNegatives([]int{0, 1, 2, 3, 4, 5})) != fmt.Sprint(a) {
			draws++
		}
	}
	if draws == 0 && fmt.Sprint(a) == fmt.Sprint(b) {
		t.Fatalf("the draw never changes with the seed or the batch: %v", a)
	}
}

// Each rank draws an example's negatives from its own share of the batch, so that share must hold them.
func TestCSENegativesMustFitARanksShare(t *testing.T) {
	cfg, err := Parse(objectives.Settings{"negatives": int64(9)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ranks int
		ok    bool
	}{{1, true}, {2, false}} {
		env := objectives.DataEnv{BatchSize: 16, Ranks: c.ranks, Log: zap.NewNop()}
		_, err := newCSEExamples(env, cfg)
		refused := err != nil && strings.Contains(err.Error(), "at least 10, not 8")
		if c.ok == refused || (!c.ok && !strings.Contains(err.Error(), "over 2 ranks")) {
			t.Errorf("batch 16 over %d ranks, 9 negatives: %v", c.ranks, err)
		}
	}
}
