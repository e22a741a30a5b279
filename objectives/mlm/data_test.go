package mlm

import (
	"slices"
	"testing"

	"convrep/datasets"
	"convrep/objectives"
)

// windowData is a dialogue of 7 turns of 6 tokens (role token 1, then five ids unique to their place,
// 10 + place) and one of 4, tokenised as datasets.TokenizeDialogues lays them out.
func windowData() (*datasets.DialogueTokens, []int64) {
	dt := &datasets.DialogueTokens{CLS: 2, SEP: 3}
	var long [][]int32
	var words []int64
	for t := range 7 {
		turn := []int32{1}
		for w := range 5 {
			id := int32(10 + 6*t + 1 + w)
			turn = append(turn, id)
			words = append(words, int64(id))
		}
		long = append(long, turn)
	}
	dt.Turns = [][][]int32{long, {{1, 90, 91, 92}}}
	return dt, words
}

// With long_dialogues = "windows" every token of a long dialogue is in some example of every epoch, so
// every one can be masked, not only the opening; the windows are a function of (seed, epoch, example).
func TestWindowsReachEveryTokenEachEpoch(t *testing.T) {
	dt, words := windowData()
	opt := maskOpts()
	const maxLen = 12 // 10 body tokens a window: the long dialogue's 42 take 5 windows
	d := newDialogueExamples(dt, opt, maxLen, false, true, 7)
	if d.Len() != 6 {
		t.Fatalf("%d examples, want 5 windows of the long dialogue and 1 of the short one", d.Len())
	}
	moved := false
	for epoch := range 6 {
		d.SetEpoch(epoch)
		seen := map[int64]bool{}
		var rows [][]int64
		for e := range d.Len() {
			r := d.row(e)
			if len(r) > maxLen || r[0] != dt.CLS || r[len(r)-1] != dt.SEP {
				t.Fatalf("epoch %d example %d: %v is not [CLS] … [SEP] within %d", epoch, e, r, maxLen)
			}
			rows = append(rows, r)
			// What MaskRow may choose: the non-special tokens of the row.
			masked, labels := MaskRow(r, len(r), opt, ExampleRand(7, epoch, e))
			if len(masked) != len(r) || len(labels) != len(r) {
				t.Fatal("MaskRow changed the row's length")
			}
			for _, id := range r {
				if !opt.Special[id] {
					seen[id] = true
				}
			}
		}
		for _, w := range words {
			if !seen[w] {
				t.Errorf("epoch %d: token %d of the long dialogue is in no example", epoch, w)
			}
		}
		if got := rows[5]; !slices.Equal(got, []int64{2, 1, 90, 91, 92, 3}) {
			t.Errorf("epoch %d: the short dialogue is %v, want it whole", epoch, got)
		}
		// Another dataset of the same seed cuts the same windows in the same epoch (a resumed run).
		again := newDialogueExamples(dt, opt, maxLen, false, true, 7)
		again.SetEpoch(epoch)
		for e := range again.Len() {
			if !slices.Equal(again.row(e), rows[e]) {
				t.Errorf("epoch %d example %d: %v, then %v for the same seed and epoch", epoch, e, rows[e], again.row(e))
			}
		}
		if epoch > 0 {
			d.SetEpoch(0)
			if !slices.Equal(d.row(1), rows[1]) {
				moved = true
			}
		}
	}
	if !moved {
		t.Error("the window borders never moved between epochs")
	}
}

// long_dialogues = "truncate" keeps one example per dialogue, cut once: with the start kept, the tokens past
// max_length never reach the model (the reason for windows); with the end kept, the opening never does.
func TestTruncateKeepsOneCut(t *testing.T) {
	dt, words := windowData()
	for _, keepEnd := range []bool{false, true} {
		d := newDialogueExamples(dt, maskOpts(), 12, keepEnd, false, 7)
		if d.Len() != 2 {
			t.Fatalf("%d examples, want one per dialogue", d.Len())
		}
		r := d.row(0)
		want := dt.Span(0, 0, 7, 12, keepEnd)
		if !slices.Equal(r, want) {
			t.Errorf("keepEnd %v: %v, want %v", keepEnd, r, want)
		}
		lost := words[0]
		if !keepEnd {
			lost = words[len(words)-1]
		}
		if slices.Contains(r, lost) {
			t.Errorf("keepEnd %v: a single cut of 10 of 42 tokens holds %d", keepEnd, lost)
		}
	}
}

func TestParseLongDialogues(t *testing.T) {
	for _, tc := range []struct {
		set  objectives.Settings
		want string // "" for an error
	}{
		{objectives.Settings{}, LongWindows},
		{objectives.Settings{"long_dialogues": "truncate"}, LongTruncate},
		{objectives.Settings{"long_dialogues": "windows"}, LongWindows},
		{objectives.Settings{"long_dialogues": "middle"}, ""},
	} {
		c, err := parseMLM(tc.set)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%v: no error", tc.set)
		case tc.want != "" && (err != nil || c.(Config).LongDialogues != tc.want):
			t.Errorf("%v: %v, %v; want %s", tc.set, c, err, tc.want)
		}
	}
}
