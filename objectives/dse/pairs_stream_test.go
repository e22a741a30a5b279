package dse

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"convrep/datasets"
	"convrep/internal/shared"
	"convrep/objectives"
	"convrep/tokenizers"
)

// ownFilesEnv is the data environment of examples/dse_own_data_mini_cpu.toml: the example's support chats,
// its column mapping and merging, with the tiny BERT fixture's tokenizer.
func ownFilesEnv(t *testing.T) objectives.DataEnv {
	t.Helper()
	dir := shared.MustPath(t, "fixtures", "tiny-bert")
	tok, err := tokenizers.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := &datasets.FileSet{Paths: []string{filepath.Join("..", "..", "examples", "own-dialogues", "support.csv")},
		Columns: datasets.Columns{Dialogue: "conversation_id", Turn: "turn", Speaker: "role", Text: "message", Domain: "topic"}}
	return objectives.DataEnv{Read: datasets.ReadOptions{Files: files, MergeSameSpeaker: true}, Pairs: VariantDSE,
		MinWords: PaperMinWords, CacheDir: t.TempDir(), Tok: tok, TokDir: dir, MaxLength: 32,
		Truncation: tokenizers.TruncateRight, Seed: 1}
}

// Own files build their pairs streamed, and the pairs are those built in memory; with the example
// experiment's train.valid_share 0.1 and seed 1, the two sides split the pairs between them and the held-out
// side still makes a batch of 16.
func TestNewPairsOwnFilesStreamed(t *testing.T) {
	env := ownFilesEnv(t)
	ds, err := env.ReadDialogues()
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := DSEPairs(ds, PairOptions{Variant: VariantDSE, MinWords: env.MinWords, Sep: " [SEP] "})
	if err != nil {
		t.Fatal(err)
	}
	want, err := TokenizePairs(pairs, "", env.Tok, env.MaxLength, env.Truncation, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		share float64
		valid bool
	}{{"all", 0, false}, {"training side", 0.1, false}, {"held-out side", 0.1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := env
			e.CacheDir = t.TempDir()
			if tc.share > 0 {
				e.Holdout = &objectives.Holdout{Share: tc.share, Seed: env.Seed, Valid: tc.valid}
			}
			d, err := NewPairs(e, e.Pairs, "")
			if err != nil {
				t.Fatal(err)
			}
			got := d.(*pairSet).pairs
			entries, _ := os.ReadDir(e.CacheDir)
			if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "pairs-") {
				t.Fatalf("cache folder holds %v, want one cache file", entries)
			}
			// Which pairs each side has: a pair is its tokens.
			have := map[string]int{}
			for i := range want.Len() {
				have[rowKey(want.Query[i], want.Response[i])]++
			}
			for i := range got.Len() {
				k := rowKey(got.Query[i], got.Response[i])
				if have[k] == 0 {
					t.Fatalf("pair %d was not built in memory", i)
				}
				have[k]--
			}
			switch {
			case tc.share == 0 && got.Len() != want.Len():
				t.Errorf("%d pairs streamed, %d in memory", got.Len(), want.Len())
			case tc.valid && got.Len() < 16:
				t.Errorf("the held-out side has %d pairs, fewer than the example's batch of 16", got.Len())
			case tc.share > 0 && !tc.valid && got.Len() >= want.Len():
				t.Errorf("the training side kept all %d pairs", got.Len())
			}
		})
	}
}

func rowKey(q, r []int32) string {
	var b strings.Builder
	for _, id := range append(append(append([]int32{}, q...), -1), r...) {
		b.WriteRune(rune(id + 2))
	}
	return b.String()
}

// genDialogues are n dialogues of 6 turns of 1 to 12 words, whose texts repeat across dialogues (dropout's
// distinct utterances) and whose lengths vary (some under the word filter).
func genDialogues(n int) []datasets.Dialogue {
	words := strings.Fields("order parcel refund invoice account password delivery payment card app update " +
		"login email address return exchange size colour warehouse tracking number today tomorrow week please thanks")
	ds := make([]datasets.Dialogue, n)
	for d := range ds {
		var turns []datasets.Turn
		for u := range 6 {
			w := make([]string, 1+(d*7+u*5)%12)
			for i := range w {
				w[i] = words[(d*13+u*31+i*17)%len(words)]
			}
			turns = append(turns, datasets.Turn{Speaker: []datasets.Speaker{datasets.User, datasets.System}[u%2], Text: strings.Join(w, " ")})
		}
		ds[d] = datasets.Dialogue{ID: fmt.Sprintf("g%06d", d), Corpus: "gen", Turns: turns}
	}
	return append(ds, toyDialogues()...)
}

// A streamed build of each construction gives the pairs that DSEPairs builds in memory, in its order (or
// datasets.Shuffle's subset of data.max_examples), tokenised as TokenizePairs does with the query cut, over
// more pairs than one chunk of the stream. (datasets' TestCachedPairsStreamMatchesInMemory checks that the
// streamed cache file is the in-memory one byte for byte.)
func TestPairsStreamMatchesDSEPairs(t *testing.T) {
	ds := genDialogues(1200) // about 5,000 pairs for dse: two chunks
	each := func(fn func(datasets.Dialogue) error) error {
		for _, d := range ds {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}
	tok := tinyBERT(t)
	corpus := filepath.Join(t.TempDir(), "gen.jsonl")
	if err := os.WriteFile(corpus, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		opt         PairOptions
		maxExamples int
	}{
		{"dse", PairOptions{Variant: VariantDSE, MinWords: 3}, 0},
		{"dse both directions", PairOptions{Variant: VariantDSE, MinWords: 3, BothDirections: true}, 0},
		{"dse2-1", PairOptions{Variant: VariantDSE21, MinWords: 3}, 0},
		{"dse123-1 tokens_left", PairOptions{Variant: VariantDSE123, MinWords: 0, QueryCut: QueryCutTokensLeft}, 0},
		{"dropout", PairOptions{Variant: VariantDropout, MinWords: 3}, 0},
		{"dse max_examples", PairOptions{Variant: VariantDSE, MinWords: 3}, 700},
		{"dse123-1 max_examples", PairOptions{Variant: VariantDSE123, MinWords: 3}, 4500},
		{"max_examples over the pairs keeps all in order", PairOptions{Variant: VariantDSE31, MinWords: 3}, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pk, err := tc.opt.Key()
			if err != nil {
				t.Fatal(err)
			}
			key := datasets.CacheKey{Corpora: []string{"gen"}, CorpusFiles: []string{corpus}, TokenizerDir: shared.MustPath(t, "fixtures", "tiny-bert"),
				Tokenizer: tok, Pairs: pk, MaxLength: 16, Truncation: tokenizers.TruncateRight, Streamed: true}
			opt := tc.opt
			s := datasets.PairStream{Each: each, NewPairer: func() (datasets.Pairer, error) { return NewPairBuilder(opt) },
				Fit: opt.QueryCut.Fit, Tok: tok, MaxLength: key.MaxLength, Truncation: key.Truncation, Workers: 2,
				MaxExamples: tc.maxExamples, Seed: 11}
			got, hit, err := datasets.CachedPairsStream(t.TempDir(), key, s, nil)
			if err != nil || hit {
				t.Fatalf("hit %v, err %v", hit, err)
			}
			pairs, err := DSEPairs(ds, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if tc.maxExamples > 0 && len(pairs) > tc.maxExamples {
				datasets.Shuffle(pairs, s.Seed)
				pairs = pairs[:tc.maxExamples]
			}
			want, err := TokenizePairs(pairs, tc.opt.QueryCut, tok, key.MaxLength, key.Truncation, 2)
			if err != nil {
				t.Fatal(err)
			}
			if want.Len() == 0 || !reflect.DeepEqual(got.Query, want.Query) || !reflect.DeepEqual(got.Response, want.Response) {
				t.Fatalf("streamed %d pairs differ from the %d built in memory", got.Len(), want.Len())
			}
		})
	}
}
