package datasets

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"convrep/tokenizers"
)

// streamWords make generated utterances: word i of utterance u of dialogue d is a function of the three, so
// that texts repeat across dialogues (dropout's distinct utterances) and lengths vary (some under the word
// filter).
var streamWords = strings.Fields("order parcel refund invoice account password delivery payment card app update " +
	"login email address return exchange size colour warehouse tracking number today tomorrow week please thanks")

// genDialogue is dialogue d of a generated corpus: 6 turns of 1 to 12 words.
func genDialogue(d int) Dialogue {
	var turns []Turn
	for u := range 6 {
		n := 1 + (d*7+u*5)%12
		words := make([]string, n)
		for i := range words {
			words[i] = streamWords[(d*13+u*31+i*17)%len(streamWords)]
		}
		sp := User
		if u%2 == 1 {
			sp = System
		}
		turns = append(turns, Turn{Speaker: sp, Text: strings.Join(words, " ")})
	}
	return Dialogue{ID: fmt.Sprintf("g%06d", d), Corpus: "gen", Turns: turns}
}

// genEach hands out the generated dialogues 0..n-1, and then the edge one.
func genEach(n int) func(func(Dialogue) error) error {
	return func(fn func(Dialogue) error) error {
		for d := range n {
			if err := fn(genDialogue(d)); err != nil {
				return err
			}
		}
		return fn(edgeDialogue())
	}
}

func collect(t testing.TB, each func(func(Dialogue) error) error) []Dialogue {
	t.Helper()
	var ds []Dialogue
	if err := each(func(d Dialogue) error { ds = append(ds, d); return nil }); err != nil {
		t.Fatal(err)
	}
	return ds
}

// streamKey is a key over a stand-in corpus folder.
func streamKey(t *testing.T, pk PairKey) CacheKey {
	t.Helper()
	corpus := filepath.Join(t.TempDir(), "gen")
	if err := os.MkdirAll(corpus, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(corpus, "gen.jsonl"), "{}\n")
	return CacheKey{Corpora: []string{"gen"}, CorpusFiles: []string{corpus}, TokenizerDir: tinyBERTDir(t),
		Tokenizer: tinyBERT(t), Pairs: pk, MaxLength: 16, Truncation: tokenizers.TruncateRight, Streamed: true}
}

// lastWords is a QueryFit that keeps a query's last 3 words and gives it 6 tokens, left-cut.
func lastWords(p Pair, opt tokenizers.BatchOptions, _ int) (string, tokenizers.BatchOptions) {
	w := strings.Fields(p.Query)
	opt.MaxLength, opt.Truncation = 6, tokenizers.TruncateLeft
	return strings.Join(w[max(0, len(w)-3):], " "), opt
}

// The streamed build gives the in-memory build's cache byte for byte: the Pairer's pairs, in its order
// (or Shuffle's subset of data.max_examples), tokenised as TokenizePairsWith does, over more pairs than one
// chunk. (DSE's constructions are checked the same way in objectives/dse.)
func TestCachedPairsStreamMatchesInMemory(t *testing.T) {
	const dialogues = 1200 // about 5,000 pairs for next: two chunks
	for _, tc := range []struct {
		name        string
		minWords    int
		dedup, fit  bool
		maxExamples int
	}{
		{"next", 3, false, false, 0},
		{"next, no filter", 0, false, false, 0},
		{"next, queries fitted", 0, false, true, 0},
		{"dedup remembers across dialogues", 3, true, false, 0},
		{"next max_examples", 3, false, false, 700},
		{"dedup max_examples, queries fitted", 3, true, true, 150},
		{"max_examples over the pairs keeps all in order", 3, false, false, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := streamKey(t, nextKey(tc.minWords, tc.dedup))
			s := PairStream{Each: genEach(dialogues), NewPairer: newNextPairer(tc.minWords, tc.dedup), Tok: key.Tokenizer,
				MaxLength: key.MaxLength, Truncation: key.Truncation, Workers: 2, MaxExamples: tc.maxExamples, Seed: 11}
			if tc.fit {
				s.Fit = lastWords
			}
			cache := t.TempDir()
			got, hit, err := CachedPairsStream(cache, key, s, nil)
			if err != nil || hit {
				t.Fatalf("hit %v, err %v", hit, err)
			}

			pairs := nextPairs(t, collect(t, s.Each), tc.minWords, tc.dedup)
			if tc.maxExamples > 0 && len(pairs) > tc.maxExamples {
				Shuffle(pairs, s.Seed)
				pairs = pairs[:tc.maxExamples]
			}
			want, err := TokenizePairsWith(pairs, s.Fit, key.Tokenizer, key.MaxLength, key.Truncation, 2)
			if err != nil {
				t.Fatal(err)
			}
			if want.Len() == 0 || !equalRows(got.Query, want.Query) || !equalRows(got.Response, want.Response) {
				t.Fatalf("streamed %d pairs differ from the %d built in memory", got.Len(), want.Len())
			}
			digest, desc, err := key.digest()
			if err != nil {
				t.Fatal(err)
			}
			var wantFile bytes.Buffer
			if err := encodeCache(&wantFile, digest, desc, want); err != nil {
				t.Fatal(err)
			}
			file, err := os.ReadFile(cachePath(cache, digest))
			if err != nil || !bytes.Equal(file, wantFile.Bytes()) {
				t.Fatalf("cache file (%d bytes, %v) is not the in-memory build's (%d bytes)", len(file), err, wantFile.Len())
			}
			entries, _ := os.ReadDir(cache)
			if len(entries) != 1 {
				t.Errorf("cache folder holds %d entries, want the cache file alone (no spill left)", len(entries))
			}

			// The second call reads the file and builds nothing.
			s.Each = func(func(Dialogue) error) error { return errors.New("read again") }
			again, hit, err := CachedPairsStream(cache, key, s, nil)
			if err != nil || !hit || !equalRows(again.Query, want.Query) {
				t.Fatalf("second call: hit %v, err %v", hit, err)
			}
		})
	}
}

// ShuffleOrder is Shuffle's permutation.
func TestShuffleOrderIsShuffle(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 1000} {
		ps := numberedPairs(n)
		Shuffle(ps, 5)
		p := ShuffleOrder(n, 5)
		for i := range ps {
			if ps[i].Query != fmt.Sprint(p[i]) {
				t.Fatalf("n=%d: position %d holds pair %s, ShuffleOrder says %d", n, i, ps[i].Query, p[i])
			}
		}
	}
}

// The build's errors name where they happened, and leave no cache file.
func TestCachedPairsStreamErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "chats.csv")
	writeTestFile(t, bad, "dialogue_id,turn,speaker,text\nc1,1,user,hello there my friend\nc1,2,agent,hi how can I help\n"+
		"c2,1,user,where is my parcel\nc2,2,bot2,it is on its way\n")
	files := FileSet{Paths: []string{bad}}
	fromFiles := func(skip bool) func(func(Dialogue) error) error {
		return func(fn func(Dialogue) error) error {
			return files.EachDialogue(ReadOptions{SkipBad: skip}, func(_ string, d Dialogue) error { return fn(d) })
		}
	}
	changing := 0
	for _, tc := range []struct {
		name        string
		each        func(func(Dialogue) error) error
		maxExamples int
		want        []string // in the error; nil: no error
		pairs       int
	}{
		{"malformed row names the file and row", fromFiles(false), 0, []string{bad, "line 5", `speaker "bot2"`}, 0},
		{"skip_bad drops its dialogue", fromFiles(true), 0, nil, 1},
		{"a read error stops the build", func(fn func(Dialogue) error) error {
			if err := fn(genDialogue(1)); err != nil {
				return err
			}
			return errors.New("disk gone")
		}, 0, []string{"disk gone"}, 0},
		{"dialogues that change between the two reads", func(fn func(Dialogue) error) error {
			changing++
			return genEach(10 * changing)(fn)
		}, 3, []string{"changed while they were read"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := streamKey(t, nextKey(0, false))
			cache := t.TempDir()
			s := PairStream{Each: tc.each, NewPairer: newNextPairer(0, false), Tok: key.Tokenizer, MaxLength: 16, MaxExamples: tc.maxExamples}
			tp, _, err := CachedPairsStream(cache, key, s, nil)
			if tc.want == nil {
				if err != nil || tp.Len() != tc.pairs {
					t.Fatalf("err %v, %d pairs, want %d", err, tp.Len(), tc.pairs)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if entries, _ := os.ReadDir(cache); len(entries) != 0 {
				t.Errorf("a failed build left %d files", len(entries))
			}
		})
	}
}

// A cache folder that cannot be written still gives the pairs, from the spills.
func TestCachedPairsStreamUnwritableCache(t *testing.T) {
	key := streamKey(t, nextKey(3, false))
	blocker := filepath.Join(t.TempDir(), "file")
	writeTestFile(t, blocker, "x")
	s := PairStream{Each: genEach(50), NewPairer: newNextPairer(3, false), Tok: key.Tokenizer, MaxLength: 16}
	got, hit, err := CachedPairsStream(filepath.Join(blocker, "cache"), key, s, nil)
	if err != nil || hit {
		t.Fatalf("hit %v, err %v", hit, err)
	}
	pairs := nextPairs(t, collect(t, s.Each), 3, false)
	want, _ := TokenizePairs(pairs, key.Tokenizer, 16, 0, 1)
	if !equalRows(got.Query, want.Query) || !equalRows(got.Response, want.Response) {
		t.Fatal("pairs from the spills differ from the in-memory build")
	}
}

// The build's live heap does not grow with the corpus beyond the index: four times the dialogues may add
// their rows' lengths (8 bytes a pair, more with the slices' spare room) and nothing of their text, where the
// in-memory build grows by hundreds of bytes a pair.
func TestCachedPairsStreamMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds caches of 10,000 and 40,000 dialogues")
	}
	key := streamKey(t, nextKey(0, false))
	// The heap the collector marks live once the build has gone quiet. A read while the tokeniser's
	// goroutines run also counts what they allocate during the collection, 6-14 MB under load, which failed
	// the bound. The sample is taken in the producer's callback, so the tokeniser finishes the chunks
	// queued and waits; three collections in a row that agree within 64 KB say it has.
	liveHeap := func() uint64 {
		read := func() uint64 {
			runtime.GC()
			s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
			metrics.Read(s)
			return s[0].Value.Uint64()
		}
		last, agreed := read(), 0
		for range 1000 {
			time.Sleep(time.Millisecond)
			now := read()
			if max(now, last)-min(now, last) >= 64<<10 {
				agreed = 0
			} else if agreed++; agreed == 2 {
				return min(now, last)
			}
			last = now
		}
		t.Fatal("the live heap never settled")
		return 0
	}
	// Each build samples its heap the same number of times: a peak of more samples is likelier to catch
	// the most chunks in flight, which would count against the larger build.
	const samples = 20
	streamed := func(n int) (peak uint64, pairs int) {
		each := func(fn func(Dialogue) error) error {
			seen := 0
			return genEach(n)(func(d Dialogue) error {
				if seen++; seen%(n/samples) == 0 {
					peak = max(peak, liveHeap())
				}
				return fn(d)
			})
		}
		k := key
		k.Extra = []string{fmt.Sprint(n)}
		s := PairStream{Each: each, NewPairer: newNextPairer(0, false), Tok: key.Tokenizer, MaxLength: 16, Workers: 2}
		tp, _, err := CachedPairsStream(t.TempDir(), k, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		return peak, tp.Len()
	}
	inMemory := func(n int) uint64 {
		ds := collect(t, genEach(n))
		pairs := nextPairs(t, ds, 0, false)
		tp, err := TokenizePairs(pairs, key.Tokenizer, 16, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		h := liveHeap()
		runtime.KeepAlive(ds)
		runtime.KeepAlive(pairs)
		runtime.KeepAlive(tp)
		return h
	}
	const few, many = 10_000, 40_000
	small, smallPairs := streamed(few)
	large, largePairs := streamed(many)
	// 24 B a pair is the index with its slices' spare room; the chunk being filled when a sample is taken
	// (up to streamChunk pairs, with their text) is a constant, but one peak may catch it full and the other
	// empty, so it is allowed for once.
	bound := 24*float64(largePairs-smallPairs) + streamChunk*400
	grew := float64(large) - float64(small)
	before := liveHeap()
	oldSmall := inMemory(few) - before
	oldGrew := float64(inMemory(many)-before) - float64(oldSmall)
	t.Logf("streamed: peak live heap %d B for %d pairs, %d B for %d (%.1f B a pair more); in memory %.1f B a pair more",
		small, smallPairs, large, largePairs, grew/float64(largePairs-smallPairs), oldGrew/float64(largePairs-smallPairs))
	if grew > bound {
		t.Errorf("the streamed build's live heap grew by %.0f B for %d more pairs, over %.0f B: it holds more than its index",
			grew, largePairs-smallPairs, bound)
	}
	if oldGrew <= 2*bound {
		t.Errorf("the in-memory build grew by %.0f B only: the test does not tell the builds apart", oldGrew)
	}
}
