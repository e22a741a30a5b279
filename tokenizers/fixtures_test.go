package tokenizers

import (
	"bufio"
	"convrep/internal/shared"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// sharedDir is ../shared; a missing folder fails the test.
func sharedDir(t testing.TB) string { return shared.MustPath(t) }

func fixture(t testing.TB, parts ...string) string {
	return filepath.Join(append([]string{sharedDir(t), "fixtures"}, parts...)...)
}

// tokCase is one line of fixtures/tokenizer/*.jsonl.
type tokCase struct {
	Case             int      `json:"case"`
	Source           string   `json:"source"`
	Text             string   `json:"text"`
	TextPair         *string  `json:"text_pair"`
	Tokens           []string `json:"tokens"`
	IDs              []int64  `json:"ids"`
	Decoded          string   `json:"decoded"`
	PairIDs          []int64  `json:"pair_ids"`
	PairTokenTypeIDs []int64  `json:"pair_token_type_ids"`
	PairTokens       []string `json:"pair_tokens"`
}

func readCases(t testing.TB, name string) []tokCase {
	t.Helper()
	path := fixture(t, "tokenizer", name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var out []tokCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var c tokCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no cases", path)
	}
	return out
}

func mustLoad(t testing.TB, dir string) *Tokenizer {
	t.Helper()
	tok, err := Load(dir)
	if err != nil {
		t.Fatalf("Load(%s): %v", dir, err)
	}
	return tok
}

// caseFiles pairs every case file with the tokenizer it was made with.
var caseFiles = []struct {
	file    string
	setup   func(t testing.TB) *Tokenizer
	wantLen int
}{
	{"bert_uncased_cases.jsonl", func(t testing.TB) *Tokenizer {
		return mustLoad(t, fixture(t, "tokenizer", "bert-base-uncased-usr-sys"))
	}, 320},
	{"roberta_cases.jsonl", func(t testing.TB) *Tokenizer {
		return mustLoad(t, fixture(t, "tiny-roberta"))
	}, 320},
	{"bert_uncased_todbert_add_tokens_cases.jsonl", func(t testing.TB) *Tokenizer {
		tok := mustLoad(t, fixture(t, "tiny-bert"))
		if n := tok.AddTokens("[SYS]", "[USR]"); n != 2 {
			t.Fatalf("AddTokens added %d tokens, want 2", n)
		}
		return tok
	}, 30},
}

// TestFixtureCases checks every case against HF's slow tokenizers: tokens,
// ids with special tokens, pair ids and pair token types.
func TestFixtureCases(t *testing.T) {
	for _, cf := range caseFiles {
		t.Run(cf.file, func(t *testing.T) {
			tok := cf.setup(t)
			cases := readCases(t, cf.file)
			if len(cases) != cf.wantLen {
				t.Fatalf("%d cases, want %d", len(cases), cf.wantLen)
			}
			var single, pairs, pairOK, decOK int
			for _, c := range cases {
				ok := true
				got, err := tok.Tokenize(c.Text)
				if err != nil || !equalStrings(got, c.Tokens) {
					t.Errorf("case %d %q: tokens %q (err %v), want %q", c.Case, c.Text, got, err, c.Tokens)
					ok = false
				}
				ids, err := tok.Encode(c.Text)
				if err != nil || !reflect.DeepEqual(ids, c.IDs) {
					t.Errorf("case %d %q: ids %v (err %v), want %v", c.Case, c.Text, ids, err, c.IDs)
					ok = false
				}
				if ok {
					single++
				}
				dec, err := tok.Decode(c.IDs, true)
				if err != nil || dec != c.Decoded {
					t.Errorf("case %d: decoded %q (err %v), want %q", c.Case, dec, err, c.Decoded)
				} else {
					decOK++
				}
				if c.TextPair == nil {
					continue
				}
				pairs++
				pids, types, err := tok.EncodePair(c.Text, *c.TextPair)
				if err != nil || !reflect.DeepEqual(pids, c.PairIDs) || !reflect.DeepEqual(types, c.PairTokenTypeIDs) {
					t.Errorf("case %d pair (%q, %q): ids %v types %v (err %v), want %v %v",
						c.Case, c.Text, *c.TextPair, pids, types, err, c.PairIDs, c.PairTokenTypeIDs)
					continue
				}
				pairOK++
			}
			t.Logf("%s: single texts %d/%d, pairs %d/%d, decoded %d/%d", cf.file, single, len(cases), pairOK, pairs, decOK, len(cases))
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAccessors(t *testing.T) {
	for i, tc := range []struct {
		kind           Kind
		size           int
		pad, mask      int64
		special, plain []int64
		tokens         map[string]int64
	}{
		{WordPiece, 30524, 0, 103, []int64{0, 100, 101, 102, 103, 30522, 30523}, []int64{1, 2023, 29999},
			map[string]int64{"[USR]": 30522, "[SYS]": 30523, "hello": 7592}},
		{ByteLevelBPE, 50265, 1, 50264, []int64{0, 1, 2, 3, 50264}, []int64{4, 50263},
			map[string]int64{"<mask>": 50264, "Ġhello": 20760}},
		{WordPiece, 30524, 0, 103, []int64{0, 100, 101, 102, 103}, []int64{30522, 30523},
			map[string]int64{"[sys]": 30522, "[usr]": 30523}},
	} {
		tok := caseFiles[i].setup(t)
		if tok.Kind() != tc.kind || tok.VocabSize() != tc.size || tok.PadID() != tc.pad || tok.MaskID() != tc.mask {
			t.Errorf("%s: kind %v size %d pad %d mask %d, want %v %d %d %d", caseFiles[i].file,
				tok.Kind(), tok.VocabSize(), tok.PadID(), tok.MaskID(), tc.kind, tc.size, tc.pad, tc.mask)
		}
		for _, id := range tc.special {
			if !tok.IsSpecial(id) {
				t.Errorf("%s: id %d not special", caseFiles[i].file, id)
			}
		}
		for _, id := range tc.plain {
			if tok.IsSpecial(id) {
				t.Errorf("%s: id %d special", caseFiles[i].file, id)
			}
		}
		for s, id := range tc.tokens {
			got, ok := tok.TokenID(s)
			back, ok2 := tok.IDToken(id)
			if !ok || !ok2 || got != id || back != s {
				t.Errorf("%s: TokenID(%q) = %d, IDToken(%d) = %q", caseFiles[i].file, s, got, id, back)
			}
		}
		if _, ok := tok.IDToken(int64(tc.size)); ok {
			t.Errorf("%s: IDToken past the vocabulary succeeded", caseFiles[i].file)
		}
		if _, err := tok.Decode([]int64{int64(tc.size)}, false); err == nil {
			t.Errorf("%s: Decode of an id past the vocabulary succeeded", caseFiles[i].file)
		}
	}
}
