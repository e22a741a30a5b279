package tokenizers

import (
	"reflect"
	"testing"
)

func TestSplitGPT2(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"hello world", []string{"hello", " world"}},
		{"a\n\nb", []string{"a", "\n", "\n", "b"}}, // lookahead gives back the last space
		{"  leading", []string{" ", " leading"}},
		{"trailing   ", []string{"trailing", "   "}},
		{"x  \ty", []string{"x", "  ", "\t", "y"}},
		{" ", []string{" "}},
		{"\n", []string{"\n"}},
		{"it's we'll I'M", []string{"it", "'s", " we", "'ll", " I", "'", "M"}},
		{" 'll", []string{" '", "ll"}},
		{"?!'s", []string{"?!'", "s"}},
		{"$1,700.50", []string{"$", "1", ",", "700", ".", "50"}},
		{"a 1 ! é", []string{"a", " 1", " !", " é"}},
		{"hello\u00a0world", []string{"hello", "\u00a0", "world"}},
		{"x\u3000\u3000y", []string{"x", "\u3000", "\u3000", "y"}},
		{"日本語 text", []string{"日本語", " text"}},
	} {
		var got []string
		splitGPT2(tc.in, func(p string) { got = append(got, p) })
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitGPT2(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestBPEMergeOrder checks HF's slow merge loop on small hand-made models:
// all occurrences of the best pair are merged, left to right, before the
// pairs they create are considered, even when those rank higher.
func TestBPEMergeOrder(t *testing.T) {
	vocab := map[string]int{}
	for i, s := range []string{"a", "b", "c", "aa", "aaaa", "ab", "aba", "abc", "<unk>"} {
		vocab[s] = i
	}
	for _, tc := range []struct {
		merges [][2]string
		word   string
		want   []string
	}{
		{[][2]string{{"a", "a"}}, "aaa", []string{"aa", "a"}},
		{[][2]string{{"a", "a"}, {"aa", "aa"}}, "aaaa", []string{"aaaa"}},
		{[][2]string{{"a", "a"}, {"aa", "aa"}}, "aaaaa", []string{"aaaa", "a"}},
		// ("ab","a") outranks ("a","b") but only exists once "a b" has been
		// merged everywhere, so "abab" ends as "ab ab", not "aba b".
		{[][2]string{{"ab", "a"}, {"a", "b"}}, "abab", []string{"ab", "ab"}},
		{[][2]string{{"a", "b"}, {"ab", "c"}}, "abcab", []string{"abc", "ab"}},
		{[][2]string{{"a", "b"}}, "c", []string{"c"}},
		{[][2]string{{"a", "b"}}, "", nil},
		// A later duplicate of a merge takes the later rank, as HF's dict.
		{[][2]string{{"a", "b"}, {"b", "c"}, {"a", "b"}}, "abc", []string{"a", "bc"}},
	} {
		m, err := newBPEModel(vocab, tc.merges, "<unk>")
		if err != nil {
			t.Fatal(err)
		}
		if got := m.merge(tc.word); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("merges %v: %q → %q, want %q", tc.merges, tc.word, got, tc.want)
		}
	}
	if _, err := newBPEModel(map[string]int{"a": 0, "b": 0}, nil, ""); err == nil {
		t.Error("duplicate vocabulary ids accepted")
	}
}

// TestRobertaTies covers the two differences sugarme's own BPE shows.
func TestRobertaTies(t *testing.T) {
	tok := mustLoad(t, fixture(t, "tiny-roberta"))
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{" 577786", []string{"Ġ5", "77", "786"}},
		{"\n\nhi", []string{"Ċ", "Ċ", "hi"}},
	} {
		got, err := tok.Tokenize(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Tokenize(%q) = %q (%v), want %q", tc.in, got, err, tc.want)
		}
	}
	// The model also works through sugarme's tokenizer.Model interface.
	toks, err := tok.bpe.Tokenize("Ġ577786")
	if err != nil || len(toks) != 3 || toks[0].Value != "Ġ5" || toks[2].Offsets[1] != len("Ġ577786") {
		t.Errorf("bpeModel.Tokenize = %+v (%v)", toks, err)
	}
}
