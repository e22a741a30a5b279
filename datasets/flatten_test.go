package datasets

import (
	"slices"
	"testing"

	"convrep/internal/shared"
	"convrep/tokenizers"
)

func TestFlattenTurns(t *testing.T) {
	turns := []Turn{{User, " i need a taxi "}, {System, "where to?"}, {User, ""}, {"agent", "hi"}}
	for _, tc := range []struct {
		opt  FlattenOptions
		want string
	}{
		{FlattenOptions{}, "[USR] i need a taxi [SYS] where to? [USR] [USR] hi"},
		{FlattenOptions{User: "<u>", System: "<s>"}, "<u> i need a taxi <s> where to? <u> <u> hi"},
	} {
		if got := FlattenTurns(turns, tc.opt); got != tc.want {
			t.Errorf("FlattenTurns(%+v) = %q, want %q", tc.opt, got, tc.want)
		}
	}
	if got := FlattenTurns(nil, FlattenOptions{}); got != "" {
		t.Errorf("no turns: %q", got)
	}
}

// Tokenising turn by turn and assembling with Span gives exactly what the tokenizer makes of the flattened
// text, and Span cuts from the end or the start as asked.
func TestTokenizeDialoguesAgreesWithFlattenedText(t *testing.T) {
	tok, err := tokenizers.Load(shared.MustPath(t, "data", "vocab", "bert-base-uncased"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TokenizeDialogues(nil, tok, FlattenOptions{}, 1); err == nil {
		t.Error("role tokens missing from the tokenizer: no error")
	}
	tok.AddSpecialTokens(RoleTokens()...)
	ds := []Dialogue{
		{ID: "a", Turns: []Turn{{User, "I need a Taxi to the station."}, {System, "Where from?"}, {User, "cambridge"}}},
		{ID: "b", Turns: []Turn{{System, "Hello, how can I help?"}}},
	}
	dt, err := TokenizeDialogues(ds, tok, FlattenOptions{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range ds {
		want, err := tok.Encode(FlattenTurns(d.Turns, FlattenOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		if got := dt.Span(i, 0, len(d.Turns), 0, false); !slices.Equal(got, want) {
			t.Errorf("dialogue %s: Span %v, the flattened text encodes to %v", d.ID, got, want)
		}
	}
	usr, _ := tok.TokenID(UserToken)
	sys, _ := tok.TokenID(SystemToken)
	if dt.Turns[0][1][0] != int32(sys) || dt.Turns[0][0][0] != int32(usr) || !dt.System[0][1] || dt.System[0][0] {
		t.Errorf("role ids or speakers wrong: %v %v", dt.Turns[0], dt.System[0])
	}
	full := dt.Span(0, 0, 3, 0, false)
	head, tail := dt.Span(0, 0, 3, 6, false), dt.Span(0, 0, 3, 6, true)
	if want := append(slices.Clone(full[:5]), dt.SEP); !slices.Equal(head, want) {
		t.Errorf("cut keeping the start: %v, want %v", head, want)
	}
	if want := append([]int64{dt.CLS}, full[len(full)-5:]...); !slices.Equal(tail, want) {
		t.Errorf("cut keeping the end: %v, want %v", tail, want)
	}
}
