package tokenizers

import (
	"reflect"
	"testing"
)

func seq(from, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(from + i)
	}
	return out
}

// TestTruncateLongestFirst pins HF's one-token-at-a-time rule: cut the
// longer text, the second one on ties.
func TestTruncateLongestFirst(t *testing.T) {
	for _, tc := range []struct {
		la, lb, room int
		wantA, wantB int
	}{
		{5, 3, 6, 3, 3},
		{4, 4, 6, 3, 3},
		{3, 3, 5, 3, 2},
		{2, 6, 4, 2, 2},
		{7, 1, 4, 3, 1},
		{0, 5, 2, 0, 2},
		{5, 0, 2, 2, 0},
		{3, 2, 10, 3, 2},
		{3, 2, 0, 0, 0},
	} {
		a, b := seq(100, tc.la), seq(200, tc.lb)
		for _, side := range []Truncation{TruncateRight, TruncateLeft} {
			ga, gb := truncate(a, b, tc.room, side)
			wa, wb := a[:tc.wantA], b[:tc.wantB]
			if side == TruncateLeft {
				wa, wb = a[tc.la-tc.wantA:], b[tc.lb-tc.wantB:]
			}
			if !reflect.DeepEqual(ga, wa) || !reflect.DeepEqual(gb, wb) {
				t.Errorf("truncate(%d, %d, room %d, side %d) = %v %v, want %v %v",
					tc.la, tc.lb, tc.room, side, ga, gb, wa, wb)
			}
		}
	}
}

func TestBatchTruncationAndPadding(t *testing.T) {
	bert := mustLoad(t, fixture(t, "tokenizer", "bert-base-uncased-usr-sys"))
	const dialogue = "[USR] one two three [SYS] four five"
	full, err := bert.Encode(dialogue)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != 9 || full[1] != 30522 || full[5] != 30523 {
		t.Fatalf("Encode(%q) = %v", dialogue, full)
	}
	cls, sep := full[0], full[len(full)-1]
	body := full[1 : len(full)-1]
	cat := func(parts ...[]int64) []int64 {
		var out []int64
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	short, err := bert.Encode("hi")
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name     string
		opt      BatchOptions
		wantRow0 []int64
		width    int
		wantRow1 []int64 // nil: "hi" untouched
	}{
		{"right", BatchOptions{MaxLength: 6}, cat([]int64{cls}, body[:4], []int64{sep}), 6, nil},
		{"left keeps the latest turn", BatchOptions{MaxLength: 6, Truncation: TruncateLeft},
			cat([]int64{cls}, body[3:], []int64{sep}), 6, nil},
		{"no truncation", BatchOptions{}, full, 9, nil},
		{"long enough", BatchOptions{MaxLength: 9}, full, 9, nil},
		{"pad to max", BatchOptions{MaxLength: 12, PadToMax: true}, full, 12, nil},
		{"only specials fit", BatchOptions{MaxLength: 2}, []int64{cls, sep}, 2, []int64{cls, sep}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := bert.EncodeBatch([]string{dialogue, "hi"}, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if b.Lengths[0] != len(tc.wantRow0) || !reflect.DeepEqual(b.InputIDs[0][:b.Lengths[0]], tc.wantRow0) {
				t.Errorf("row 0 = %v (length %d), want %v", b.InputIDs[0], b.Lengths[0], tc.wantRow0)
			}
			wantRow1 := short
			if tc.wantRow1 != nil {
				wantRow1 = tc.wantRow1
			}
			for i, row := range b.InputIDs {
				if len(row) != tc.width || len(b.AttentionMask[i]) != tc.width || len(b.TokenTypeIDs[i]) != tc.width {
					t.Fatalf("row %d width %d, want %d", i, len(row), tc.width)
				}
				for j := range row {
					real := j < b.Lengths[i]
					if (b.AttentionMask[i][j] == 1) != real || (!real && row[j] != bert.PadID()) || b.TokenTypeIDs[i][j] != 0 {
						t.Errorf("row %d position %d: id %d mask %d type %d", i, j, row[j], b.AttentionMask[i][j], b.TokenTypeIDs[i][j])
					}
				}
			}
			if !reflect.DeepEqual(b.InputIDs[1][:b.Lengths[1]], wantRow1) {
				t.Errorf("row 1 = %v, want %v", b.InputIDs[1], wantRow1)
			}
		})
	}
}

func TestPairBatchTruncation(t *testing.T) {
	rob := mustLoad(t, fixture(t, "tiny-roberta"))
	a, b := "one two three four five", "six seven eight"
	ea, _ := rob.encodeText(a, false)
	eb, _ := rob.encodeText(b, false)
	if len(ea.ids) != 5 || len(eb.ids) != 3 {
		t.Fatalf("setup: %d and %d tokens, want 5 and 3", len(ea.ids), len(eb.ids))
	}
	// 4 special tokens + room 6: "longest first" takes two from a.
	for _, side := range []Truncation{TruncateRight, TruncateLeft} {
		got, err := rob.EncodePairBatch([]string{a}, []string{b}, BatchOptions{MaxLength: 10, Truncation: side})
		if err != nil {
			t.Fatal(err)
		}
		keepA := ea.ids[:3]
		if side == TruncateLeft {
			keepA = ea.ids[2:]
		}
		want := []int64{0}
		want = append(append(want, keepA...), 2, 2)
		want = append(append(want, eb.ids...), 2)
		if !reflect.DeepEqual(got.InputIDs[0], want) {
			t.Errorf("side %d: %v, want %v", side, got.InputIDs[0], want)
		}
		for _, v := range got.TokenTypeIDs[0] {
			if v != 0 {
				t.Errorf("RoBERTa token type %d", v)
			}
		}
	}
	bert := mustLoad(t, fixture(t, "tiny-bert"))
	got, err := bert.EncodePairBatch([]string{"a b c"}, []string{"d e"}, BatchOptions{MaxLength: 7, Truncation: TruncateLeft})
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []int64{0, 0, 0, 0, 1, 1, 1}
	if !reflect.DeepEqual(got.TokenTypeIDs[0], wantTypes) || got.Lengths[0] != 7 {
		t.Errorf("BERT pair types %v (length %d), want %v", got.TokenTypeIDs[0], got.Lengths[0], wantTypes)
	}
}

func TestBatchErrors(t *testing.T) {
	bert := mustLoad(t, fixture(t, "tiny-bert"))
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"max length below specials", func() error {
			_, err := bert.EncodeBatch([]string{"hi"}, BatchOptions{MaxLength: 1})
			return err
		}},
		{"pair max length below specials", func() error {
			_, err := bert.EncodePairBatch([]string{"hi"}, []string{"yo"}, BatchOptions{MaxLength: 2})
			return err
		}},
		{"pad to max without max", func() error {
			_, err := bert.EncodeBatch([]string{"hi"}, BatchOptions{PadToMax: true})
			return err
		}},
		{"negative max", func() error {
			_, err := bert.EncodeBatch([]string{"hi"}, BatchOptions{MaxLength: -1})
			return err
		}},
		{"pair count mismatch", func() error {
			_, err := bert.EncodePairBatch([]string{"a", "b"}, []string{"c"}, BatchOptions{})
			return err
		}},
	} {
		if tc.run() == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	b, err := bert.EncodeBatch(nil, BatchOptions{})
	if err != nil || len(b.InputIDs) != 0 {
		t.Errorf("empty batch: %+v, %v", b, err)
	}
}

// TestEncodeOne holds EncodeOne to EncodeBatch's row for one text, for both sides of the cut, and its full
// length to the uncut encoding's.
func TestEncodeOne(t *testing.T) {
	bert := mustLoad(t, fixture(t, "tokenizer", "bert-base-uncased-usr-sys"))
	const text = "[USR] one two three [SYS] four five"
	uncut, err := bert.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		maxLength int
		side      Truncation
	}{{0, TruncateRight}, {4, TruncateRight}, {4, TruncateLeft}, {9, TruncateRight}, {50, TruncateLeft}} {
		opt := BatchOptions{MaxLength: tc.maxLength, Truncation: tc.side}
		want, err := bert.EncodeBatch([]string{text}, opt)
		if err != nil {
			t.Fatal(err)
		}
		ids, types, full, err := bert.EncodeOne(text, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ids, want.InputIDs[0]) || !reflect.DeepEqual(types, want.TokenTypeIDs[0]) || full != len(uncut) {
			t.Errorf("EncodeOne(max %d, side %d) = %v %v full %d, want %v %v full %d",
				tc.maxLength, tc.side, ids, types, full, want.InputIDs[0], want.TokenTypeIDs[0], len(uncut))
		}
	}
	if _, _, _, err := bert.EncodeOne(text, BatchOptions{MaxLength: 1}); err == nil {
		t.Error("EncodeOne with MaxLength 1 (no room for [CLS] and [SEP]) gave no error")
	}
}
