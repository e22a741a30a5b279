package datasets

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"convrep/tokenizers"
)

// cacheFixture is a corpus folder and a key over it with the tiny BERT.
type cacheFixture struct {
	dir    string // corpus folder
	cache  string
	key    CacheKey
	pairs  []Pair
	builds int
}

func newCacheFixture(t *testing.T) *cacheFixture {
	t.Helper()
	root := t.TempDir()
	corpus := filepath.Join(root, "toy")
	if err := os.MkdirAll(filepath.Join(corpus, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(corpus, "a.json"), `{"dialogues": 1}`)
	writeTestFile(t, filepath.Join(corpus, "sub", "b.json"), `{"dialogues": 2}`)
	pairs := nextPairs(t, []Dialogue{genDialogue(0), genDialogue(1), edgeDialogue()}, 3, false)
	return &cacheFixture{
		dir: corpus, cache: filepath.Join(root, "cache"), pairs: pairs,
		key: CacheKey{
			Corpora: []string{"toy"}, CorpusFiles: []string{corpus},
			TokenizerDir: tinyBERTDir(t), Tokenizer: tinyBERT(t),
			Pairs: nextKey(3, false), MaxLength: 32, Truncation: tokenizers.TruncateRight,
		},
	}
}

func writeTestFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *cacheFixture) build() (*TokenizedPairs, error) {
	f.builds++
	return TokenizePairs(f.pairs, f.key.Tokenizer, f.key.MaxLength, f.key.Truncation, 2)
}

// get runs CachedPairsLog and returns the warnings logged.
func (f *cacheFixture) get(t *testing.T) (*TokenizedPairs, bool, []observer.LoggedEntry) {
	t.Helper()
	core, logs := observer.New(zapcore.WarnLevel)
	tp, hit, err := CachedPairsLog(f.cache, f.key, f.build, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	return tp, hit, logs.All()
}

func (f *cacheFixture) path(t *testing.T) string {
	t.Helper()
	d, _, err := f.key.digest()
	if err != nil {
		t.Fatal(err)
	}
	return cachePath(f.cache, d)
}

func TestCachedPairsMissThenHit(t *testing.T) {
	f := newCacheFixture(t)
	first, hit, warns := f.get(t)
	if hit || f.builds != 1 || len(warns) != 0 {
		t.Fatalf("first call: hit %v, %d builds, warnings %v", hit, f.builds, warns)
	}
	if _, err := os.Stat(f.path(t)); err != nil {
		t.Fatalf("no cache file written: %v", err)
	}
	second, hit, warns := f.get(t)
	if !hit || f.builds != 1 || len(warns) != 0 {
		t.Fatalf("second call: hit %v, %d builds, warnings %v", hit, f.builds, warns)
	}
	if !equalRows(first.Query, second.Query) || !equalRows(first.Response, second.Response) || second.Len() != len(f.pairs) {
		t.Fatal("the cached pairs differ from the built ones")
	}
	// CachedPairs is the same with zap's global logger.
	if _, hit, err := CachedPairs(f.cache, f.key, f.build); err != nil || !hit || f.builds != 1 {
		t.Fatalf("CachedPairs: hit %v, %d builds, %v", hit, f.builds, err)
	}
}

func TestCachedPairsRebuildsDamagedFiles(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, f *cacheFixture, path string)
	}{
		{"truncated", func(t *testing.T, f *cacheFixture, path string) {
			b, _ := os.ReadFile(path)
			writeTestFile(t, path, string(b[:len(b)/2]))
		}},
		{"empty", func(t *testing.T, f *cacheFixture, path string) { writeTestFile(t, path, "") }},
		{"bit flipped", func(t *testing.T, f *cacheFixture, path string) {
			b, _ := os.ReadFile(path)
			b[len(b)-20] ^= 0x10
			writeTestFile(t, path, string(b))
		}},
		{"other version", func(t *testing.T, f *cacheFixture, path string) {
			b, _ := os.ReadFile(path)
			b[8]++
			writeTestFile(t, path, string(b))
		}},
		{"not a cache file", func(t *testing.T, f *cacheFixture, path string) { writeTestFile(t, path, "hello, world\n") }},
		{"another key's file", func(t *testing.T, f *cacheFixture, path string) {
			other := f.key
			other.MaxLength = 16
			var buf bytes.Buffer
			d, desc, err := other.digest()
			if err != nil {
				t.Fatal(err)
			}
			tp, err := TokenizePairs(f.pairs, f.key.Tokenizer, 16, f.key.Truncation, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := encodeCache(&buf, d, desc, tp); err != nil {
				t.Fatal(err)
			}
			writeTestFile(t, path, buf.String())
		}},
		{"a folder in its place", func(t *testing.T, f *cacheFixture, path string) {
			os.Remove(path)
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newCacheFixture(t)
			want, _, _ := f.get(t)
			tc.damage(t, f, f.path(t))
			got, hit, warns := f.get(t)
			if hit || f.builds != 2 {
				t.Fatalf("damaged file: hit %v, %d builds; want a rebuild", hit, f.builds)
			}
			if len(warns) == 0 {
				t.Fatal("damaged file: nothing logged")
			}
			if !equalRows(got.Query, want.Query) || !equalRows(got.Response, want.Response) {
				t.Fatal("rebuilt pairs differ")
			}
			if tc.name == "a folder in its place" {
				return // the folder stays; the pairs were still returned
			}
			if _, hit, warns := f.get(t); !hit || f.builds != 2 || len(warns) != 0 {
				t.Fatalf("after the rebuild: hit %v, %d builds, warnings %v", hit, f.builds, warns)
			}
		})
	}
}

func TestCachedPairsBuildProblems(t *testing.T) {
	f := newCacheFixture(t)
	boom := errors.New("boom")
	if _, _, err := CachedPairs(f.cache, f.key, func() (*TokenizedPairs, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("build error: got %v", err)
	}
	uneven := func() (*TokenizedPairs, error) { return &TokenizedPairs{Query: [][]int32{{1}}}, nil }
	if _, _, err := CachedPairs(f.cache, f.key, uneven); err == nil {
		t.Error("uneven build result: no error")
	}
	if _, err := os.Stat(f.path(t)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed build left a cache file: %v", err)
	}
	// A cache folder that cannot be created: the pairs still come back.
	blocker := filepath.Join(t.TempDir(), "file")
	writeTestFile(t, blocker, "x")
	core, logs := observer.New(zapcore.WarnLevel)
	tp, hit, err := CachedPairsLog(filepath.Join(blocker, "cache"), f.key, f.build, zap.New(core))
	if err != nil || hit || tp.Len() != len(f.pairs) || logs.Len() == 0 {
		t.Errorf("unwritable cache: %v pairs, hit %v, %v, %d warnings", tp, hit, err, logs.Len())
	}
}

func TestCacheKeyChanges(t *testing.T) {
	f := newCacheFixture(t)
	base, err := f.key.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := f.key.Digest(); again != base {
		t.Fatal("the same key gave two digests")
	}
	same := []struct {
		name string
		edit func(k *CacheKey)
	}{
		{"corpus path unclean", func(k *CacheKey) { k.CorpusFiles = []string{f.dir + "/../toy/"} }},
		{"tokenizer reloaded", func(k *CacheKey) { k.Tokenizer = tinyBERT(t) }},
		{"corpus file touched", func(k *CacheKey) {
			later := time.Now().Add(time.Hour)
			os.Chtimes(filepath.Join(f.dir, "a.json"), later, later)
		}},
	}
	for _, tc := range same {
		k := f.key
		tc.edit(&k)
		if d, err := k.Digest(); err != nil || d != base {
			t.Errorf("%s: digest changed (%v)", tc.name, err)
		}
	}

	changed := []struct {
		name string
		edit func(t *testing.T, k *CacheKey)
	}{
		{"variant", func(t *testing.T, k *CacheKey) { k.Pairs.Variant = "dse2-1" }},
		{"query cut", func(t *testing.T, k *CacheKey) { k.Pairs.QueryCut = "tokens_left" }},
		{"min words", func(t *testing.T, k *CacheKey) { k.Pairs.MinWords = 2 }},
		{"sep", func(t *testing.T, k *CacheKey) { k.Pairs.Sep = " </s> " }},
		{"both directions", func(t *testing.T, k *CacheKey) { k.Pairs.BothDirections = true }},
		{"max length", func(t *testing.T, k *CacheKey) { k.MaxLength = 64 }},
		{"truncation", func(t *testing.T, k *CacheKey) { k.Truncation = tokenizers.TruncateLeft }},
		{"merge speakers", func(t *testing.T, k *CacheKey) { k.MergeSpeakers = true }},
		{"metalwoz multiwoz kept", func(t *testing.T, k *CacheKey) { k.MetaLWOZMultiWOZ = true }},
		{"corpora", func(t *testing.T, k *CacheKey) { k.Corpora = []string{"toy", "sgd"} }},
		{"extra", func(t *testing.T, k *CacheKey) { k.Extra = []string{"domains=taxi"} }},
		{"token added at run time", func(t *testing.T, k *CacheKey) {
			k.Tokenizer = tinyBERT(t)
			k.Tokenizer.AddSpecialTokens("[USR]", "[SYS]")
		}},
		{"tokenizer file edited", func(t *testing.T, k *CacheKey) {
			dir := t.TempDir()
			for _, name := range []string{"vocab.txt", "special_tokens_map.json", "tokenizer_config.json"} {
				b, err := os.ReadFile(filepath.Join(tinyBERTDir(t), name))
				if err != nil {
					t.Fatal(err)
				}
				if name == "tokenizer_config.json" {
					b = bytes.Replace(b, []byte(`"model_max_length": 64`), []byte(`"model_max_length": 65`), 1)
				}
				writeTestFile(t, filepath.Join(dir, name), string(b))
			}
			k.TokenizerDir = dir
		}},
		{"corpus file content, same size", func(t *testing.T, k *CacheKey) {
			writeTestFile(t, filepath.Join(f.dir, "sub", "b.json"), `{"dialogues": 3}`)
		}},
		{"corpus file added", func(t *testing.T, k *CacheKey) {
			writeTestFile(t, filepath.Join(f.dir, "c.json"), `{}`)
		}},
	}
	seen := map[string]string{base: "base"}
	for _, tc := range changed {
		k := f.key
		tc.edit(t, &k)
		d, err := k.Digest()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if prev, dup := seen[d]; dup {
			t.Errorf("%s: digest equals that of %s", tc.name, prev)
		}
		seen[d] = tc.name
	}
}

func TestCacheKeyErrors(t *testing.T) {
	f := newCacheFixture(t)
	tests := []struct {
		name string
		edit func(k *CacheKey)
	}{
		{"no tokenizer", func(k *CacheKey) { k.Tokenizer = nil }},
		{"no tokenizer folder", func(k *CacheKey) { k.TokenizerDir = "" }},
		{"tokenizer folder without tokenizer files", func(k *CacheKey) { k.TokenizerDir = f.dir }},
		{"no corpus files", func(k *CacheKey) { k.CorpusFiles = nil }},
		{"missing corpus file", func(k *CacheKey) { k.CorpusFiles = []string{filepath.Join(f.dir, "nope.json")} }},
		{"empty corpus folder", func(k *CacheKey) { k.CorpusFiles = []string{t.TempDir()} }},
		{"no pair construction", func(k *CacheKey) { k.Pairs.Variant = "" }},
	}
	for _, tc := range tests {
		k := f.key
		tc.edit(&k)
		if _, err := k.Digest(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
		if _, _, err := CachedPairs(f.cache, k, f.build); err == nil {
			t.Errorf("%s: CachedPairs gave no error", tc.name)
		}
	}
}
