package tokenizers

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/tokenizer"
)

// trapStrings broke sugarme's own pipeline (panics, duplicated text) or
// sit on Unicode corner cases.
var trapStrings = []string{
	"", " ", "\x00", "\xff\xfe\xfd", "abc\xc3", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80",
	"İstanbul", "ẞ STRASSE", "\u212a kelvin", "\u2126 ohm", "ΣΑΣ", "ǅ",
	"\u200bhello world", "\u00adhello world", "\u0085hello world", "\ufffdhello world",
	"e\u0301\u0301\u0301", "\u0301", "\u0301\u0301 x", "\ufeffbom", "\u2028line\u2029para",
	"\x1c\x1d\x1e\x1f", "a\u00a0\u00a0b", "\u3000", "\U0010FFFF\U000E0001", "\uE000 private",
	"[USR][SYS][USR]", "[USR", "[[USR]]", "<s><mask></s>", "<mask> <mask>", " <mask>", "<pad>" + strings.Repeat(" ", 10),
	"\t\r\n\v\f", strings.Repeat("a", 101), strings.Repeat("é", 300), strings.Repeat("'s", 200),
	strings.Repeat("🍕", 100), strings.Repeat("[SYS] x ", 50), strings.Repeat("ab", 5000),
}

func trapTokenizers(t testing.TB) map[string]*Tokenizer {
	return map[string]*Tokenizer{
		"bert":    caseFiles[0].setup(t),
		"roberta": caseFiles[1].setup(t),
		"todbert": caseFiles[2].setup(t),
	}
}

// TestNoPanicOnTraps runs every entry point over the trap strings; none
// may fail (both vocabularies can represent any text).
func TestNoPanicOnTraps(t *testing.T) {
	for name, tok := range trapTokenizers(t) {
		for _, s := range trapStrings {
			checkInvariants(t, name, tok, s)
		}
		if _, err := tok.EncodePairBatch(trapStrings, trapStrings, BatchOptions{MaxLength: 16, Truncation: TruncateLeft}); err != nil {
			t.Errorf("%s: EncodePairBatch: %v", name, err)
		}
	}
}

// TestTrapResults pins what HF's slow BertTokenizer gives where sugarme
// panicked or duplicated text.
func TestTrapResults(t *testing.T) {
	bert := caseFiles[0].setup(t)
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"İstanbul", []string{"istanbul"}}, // Python: "i̇stanbul", the dot is stripped as an accent
		{"\u212a", []string{"k"}},
		{"\u200bhello world", []string{"hello", "world"}},
		{"\u00adhello world", []string{"hello", "world"}},
		{"\u0085hello world", []string{"hello", "world"}},
		{"\ufffdhello world", []string{"hello", "world"}},
		{"\xffhello\xfe world", []string{"hello", "world"}},
		{"hello\u00a0world", []string{"hello", "world"}},
		{"\u2028hello\u2029world", []string{"hello", "world"}},
		{"Ça\u0301", []string{"ca"}},
		{"[USR]İ[SYS]", []string{"[USR]", "i", "[SYS]"}},
	} {
		got, err := bert.Tokenize(tc.in)
		if err != nil || !equalStrings(got, tc.want) {
			t.Errorf("Tokenize(%q) = %q (%v), want %q", tc.in, got, err, tc.want)
		}
	}
}

// checkInvariants encodes s every way and checks what must hold for any
// input: no error, ids inside the vocabulary, special tokens added around
// the text, and byte-level BPE losing nothing.
func checkInvariants(t testing.TB, name string, tok *Tokenizer, s string) {
	t.Helper()
	checkCore(t, name, tok, s)
	if _, _, err := tok.EncodePair(s, s); err != nil {
		t.Fatalf("%s: EncodePair(%q): %v", name, s, err)
	}
	for _, side := range []Truncation{TruncateRight, TruncateLeft} {
		checkBatch(t, name, tok, s, side)
	}
}

// checkCore is the part of checkInvariants cheap enough for every fuzz input.
func checkCore(t testing.TB, name string, tok *Tokenizer, s string) {
	t.Helper()
	toks, err := tok.Tokenize(s)
	if err != nil {
		t.Fatalf("%s: Tokenize(%q): %v", name, s, err)
	}
	ids, err := tok.Encode(s)
	if err != nil {
		t.Fatalf("%s: Encode(%q): %v", name, s, err)
	}
	if len(ids) != len(toks)+2 {
		t.Fatalf("%s: %q: %d ids for %d tokens", name, s, len(ids), len(toks))
	}
	for _, id := range ids {
		if id < 0 || id >= int64(tok.VocabSize()) {
			t.Fatalf("%s: %q: id %d outside the vocabulary", name, s, id)
		}
	}
	if _, err := tok.Decode(ids, true); err != nil {
		t.Fatalf("%s: Decode(%q): %v", name, s, err)
	}
	// Byte-level BPE is lossless unless a special token is typed in the text.
	if tok.kind == ByteLevelBPE && !strings.Contains(s, "<") {
		if got := tok.tokensToString(toks); got != validUTF8(s) {
			t.Fatalf("%s: %q comes back as %q", name, s, got)
		}
	}
}

// checkBatch encodes s alone and as a pair with itself, cut to 8 tokens.
func checkBatch(t testing.TB, name string, tok *Tokenizer, s string, side Truncation) {
	t.Helper()
	b, err := tok.EncodeInputs([]Input{{Text: s}, {Text: s, Pair: s, HasPair: true}}, BatchOptions{MaxLength: 8, Truncation: side})
	if err != nil {
		t.Fatalf("%s: EncodeInputs(%q): %v", name, s, err)
	}
	for _, n := range b.Lengths {
		if n > 8 {
			t.Fatalf("%s: %q: row of %d tokens past MaxLength 8", name, s, n)
		}
	}
}

// FuzzEncode feeds arbitrary bytes to both tokenizers. Seeds stay short:
// long ones make every mutation (and the fuzzer's minimisation) slow.
func FuzzEncode(f *testing.F) {
	for _, s := range trapStrings {
		if len(s) <= 128 {
			f.Add(s)
		}
	}
	for _, c := range readCases(f, "roberta_cases.jsonl")[200:] {
		f.Add(c.Text)
	}
	toks := trapTokenizers(f)
	f.Fuzz(func(t *testing.T, s string) {
		for name, tok := range toks {
			checkCore(t, name, tok, s)
			checkBatch(t, name, tok, s, Truncation(len(s)%2))
		}
	})
}

// TestConcurrentEncode shares one tokenizer between goroutines (run with
// -race): the BPE word cache is the only mutable state.
func TestConcurrentEncode(t *testing.T) {
	for name, tok := range trapTokenizers(t) {
		cases := readCases(t, "roberta_cases.jsonl")
		want := make([][]int64, len(cases))
		for i, c := range cases {
			want[i], _ = tok.Encode(c.Text)
		}
		errs := make(chan error, 4)
		for g := 0; g < 4; g++ {
			go func() {
				for i := range cases {
					j := (i*7 + g) % len(cases)
					got, err := tok.Encode(cases[j].Text)
					if err == nil && !slices.Equal(got, want[j]) {
						err = fmt.Errorf("%s: case %d: %v, want %v", name, j, got, want[j])
					}
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for g := 0; g < 4; g++ {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}
}

// panicModel stands in for a third-party model that panics.
type panicModel struct{ tokenizer.Model }

func (panicModel) Tokenize(string) ([]tokenizer.Token, error) { panic("boom") }

// TestRecoverLibraryPanic checks that a panic below Encode becomes an error.
func TestRecoverLibraryPanic(t *testing.T) {
	tok := caseFiles[0].setup(t)
	tok.wp = panicModel{tok.wp}
	if _, err := tok.Encode("hello"); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Encode error %v, want the recovered panic", err)
	}
	if _, err := tok.EncodeBatch([]string{"hello"}, BatchOptions{}); err == nil {
		t.Error("EncodeBatch hid the panic")
	}
	// Text made only of special tokens never reaches the model.
	if ids, err := tok.Encode("[USR][SYS]"); err != nil || len(ids) != 4 {
		t.Errorf("Encode([USR][SYS]) = %v, %v", ids, err)
	}
}
