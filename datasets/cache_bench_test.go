package datasets

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convrep/internal/atomicfile"
	"convrep/tokenizers"
)

// benchPairs are dialogue-like pairs of 8 to 30 words.
func benchPairs(n int) []Pair {
	words := strings.Fields("i am looking for a cheap restaurant in the centre of town what type of food " +
		"would you like korean pizza please book a table for two at seven thirty on friday the " +
		"train leaves cambridge at 10:15 and arrives in london kings cross 50 minutes later thanks")
	r := rand.New(rand.NewPCG(1, 2))
	sentence := func() string {
		s := make([]string, 8+r.IntN(23))
		for i := range s {
			s[i] = words[r.IntN(len(words))]
		}
		return strings.Join(s, " ") + "."
	}
	ps := make([]Pair, n)
	for i := range ps {
		ps[i] = Pair{Query: sentence(), Response: sentence(), Dialogue: fmt.Sprint(i / 10), Corpus: "bench"}
	}
	return ps
}

func BenchmarkTokenizePairs(b *testing.B) {
	tok := tinyBERT(b)
	pairs := benchPairs(4096)
	b.ResetTimer()
	for b.Loop() {
		if _, err := TokenizePairs(pairs, tok, 64, tokenizers.TruncateRight, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(pairs))/b.Elapsed().Seconds(), "pairs/s")
}

// syntheticTokenized is n pairs of BERT-like ids, 8 to 40 per row.
func syntheticTokenized(n int) *TokenizedPairs {
	r := rand.New(rand.NewPCG(3, 4))
	row := func() []int32 {
		ids := make([]int32, 8+r.IntN(33))
		ids[0], ids[len(ids)-1] = 101, 102
		for i := 1; i < len(ids)-1; i++ {
			ids[i] = 999 + r.Int32N(29000)
		}
		return ids
	}
	tp := &TokenizedPairs{Query: make([][]int32, n), Response: make([][]int32, n)}
	for i := range n {
		tp.Query[i], tp.Response[i] = row(), row()
	}
	return tp
}

// BenchmarkCacheHit loads a cache file of 500,000 pairs (about 24 ids a
// side): read, checksum and decode, as a hit does after the key.
func BenchmarkCacheHit(b *testing.B) {
	tp := syntheticTokenized(500_000)
	digest := [32]byte{42}
	path := cachePath(b.TempDir(), digest)
	err := atomicfile.Write(path, func(w io.Writer) error { return encodeCache(w, digest, []byte("bench"), tp) })
	if err != nil {
		b.Fatal(err)
	}
	info, _ := os.Stat(path)
	b.ResetTimer()
	for b.Loop() {
		got, err := loadCache(path, digest)
		if err != nil || got.Len() != tp.Len() {
			b.Fatalf("%v, %d pairs", err, got.Len())
		}
	}
	b.ReportMetric(float64(info.Size())/(1<<20), "MiB")
}

// BenchmarkCacheKey is the cost of a key over the real pretraining
// corpora and the BERT vocabulary: it is paid on every run, hit or not.
func BenchmarkCacheKey(b *testing.B) {
	tok := tinyBERT(b)
	key := CacheKey{
		CorpusFiles:  []string{filepath.Join(filepath.Dir(tinyBERTDir(b)), "..", "data", "pretrain")},
		TokenizerDir: tinyBERTDir(b), Tokenizer: tok, Pairs: PairKey{Variant: "dse", MinWords: 3, Sep: " [SEP] "},
	}
	for b.Loop() {
		if _, err := key.Digest(); err != nil {
			b.Fatal(err)
		}
	}
}
