package datasets

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"sync/atomic"

	"go.uber.org/zap"

	"convrep/internal/atomicfile"
	"convrep/tokenizers"
)

// A streamed cache build (CachedPairsStream) holds one dialogue's pairs, a few chunks of pairs being
// tokenised, and the cache's index (two lengths a pair), never the corpus: dialogues come one at a time,
// each one's pairs are built (a Pairer, such as DSE's, §3.1 and §4.4: consecutive utterances of one
// dialogue), tokenised in chunks on the CPUs while the next dialogues are read, and their ids appended to
// two spill files, one a side, in the cache's directory. The cache file is then written from the spills,
// atomically, and read back as any cache hit is. The spills are unlinked as soon as they are made, so that
// a crash leaves nothing behind.
//
// Its pairs, their order and their ids are those that the Pairer and TokenizePairsWith give the same
// dialogues in memory, and so is the subset of data.max_examples: Shuffle's permutation, drawn from the
// number of pairs alone (ShuffleOrder), for which the dialogues are read twice, once to count the pairs and
// once to tokenise the chosen ones.

// PairStream is what a streamed cache build reads and how it tokenises.
type PairStream struct {
	// Each hands every dialogue to fn, one at a time, in reading order, and returns fn's first error. It is
	// called twice with MaxExamples, and must give the same dialogues both times.
	Each func(fn func(Dialogue) error) error
	// NewPairer starts the pairs' construction afresh for one read of the dialogues (a Pairer may remember
	// what it saw, as DSE's dropout remembers the texts it kept).
	NewPairer func() (Pairer, error)
	// Fit, Tok, MaxLength and Truncation are TokenizePairsWith's settings; Workers its goroutines (<= 0: one
	// per CPU).
	Fit        QueryFit
	Tok        *tokenizers.Tokenizer
	MaxLength  int
	Truncation tokenizers.Truncation
	Workers    int
	// MaxExamples > 0 keeps a random subset of that many pairs, in a random order, as Shuffle with Seed and
	// a cut would; 0 keeps every pair in the order built.
	MaxExamples int
	Seed        int64
}

// streamChunk is how many pairs are tokenised at a time: enough to keep every worker busy, few enough that
// the chunks in flight (one filling, one waiting, one being tokenised) are a small, fixed cost.
const streamChunk = 4096

// CachedPairsStream is CachedPairsLog for pairs built while the dialogues stream in: on a miss, the cache
// file is built from s without holding the dialogues, their pairs or their ids (see PairStream), and the
// pairs returned are read from it. Where the file cannot be written, a warning says so and the pairs are
// read from the spills instead.
func CachedPairsStream(cacheDir string, key CacheKey, s PairStream, log *zap.Logger) (*TokenizedPairs, bool, error) {
	if log == nil {
		log = zap.NewNop()
	}
	c, tp, err := lookupCache(cacheDir, key, log)
	if tp != nil || err != nil {
		return tp, tp != nil, err
	}
	path, digest, desc := c.path, c.digest, c.desc
	sp, err := s.build(cacheDir, key.Pairs.Variant, log)
	if err != nil {
		return nil, false, fmt.Errorf("pair cache %s: build: %w", path, err)
	}
	defer sp.close()
	err = os.MkdirAll(cacheDir, 0o755)
	if err == nil {
		err = atomicfile.Write(path, func(w io.Writer) error { return sp.encode(w, digest, desc) })
	}
	if err == nil {
		if tp, err = loadCache(path, digest); err == nil {
			return tp, false, nil
		}
	}
	// The pairs are good even when they cannot be stored: warn and go on.
	log.Warn("pair cache not written; the next run builds again", zap.String("file", path), zap.Error(err))
	if tp, err = sp.decode(digest, desc); err != nil {
		return nil, false, fmt.Errorf("pair cache %s: build: %w", path, err)
	}
	return tp, false, nil
}

// build spills the tokenised pairs of s into dir (or, where dir cannot hold them, the system's temporary
// folder); variant names the construction in the log.
func (s PairStream) build(dir, variant string, log *zap.Logger) (*pairSpill, error) {
	if s.Each == nil {
		return nil, fmt.Errorf("no dialogues to read")
	}
	if s.Tok == nil {
		return nil, fmt.Errorf("tokenize pairs: nil tokenizer")
	}
	if s.MaxLength < 0 {
		return nil, fmt.Errorf("tokenize pairs: negative max length %d", s.MaxLength)
	}
	if s.NewPairer == nil {
		return nil, fmt.Errorf("no pair construction")
	}
	var keep func(int) bool
	var order []int
	total := -1 // the pairs the first read counted, with MaxExamples
	if s.MaxExamples > 0 {
		p, err := s.NewPairer()
		if err != nil {
			return nil, err
		}
		c := NewPairCounter(p)
		total = 0
		if err := s.Each(func(d Dialogue) error { total += c.Add(d); return nil }); err != nil {
			return nil, err
		}
		if total > s.MaxExamples {
			chosen := ShuffleOrder(total, s.Seed)[:s.MaxExamples]
			keep, order = subset(total, chosen)
		}
	}
	sp, err := newPairSpill(dir)
	if err != nil {
		if sp, err = newPairSpill(os.TempDir()); err != nil {
			return nil, fmt.Errorf("spill file: %w", err)
		}
	}
	st, err := s.spill(sp, keep)
	if err == nil && total >= 0 && st.pairs != total {
		err = fmt.Errorf("the dialogues changed while they were read: %d pairs, then %d", total, st.pairs)
	}
	if err != nil {
		sp.close()
		return nil, err
	}
	sp.order = order
	log.Info("built pairs", zap.Int("dialogues", st.dialogues), zap.Int("pairs", st.pairs), zap.Int("kept", sp.n),
		zap.String("variant", variant), zap.Bool("streamed", true))
	return sp, nil
}

// subset is the membership test and the spill order of the pairs chosen of total: the spill holds them
// in the order built, and row r of the cache is chosen[r], the spill's row order[r].
func subset(total int, chosen []int) (keep func(int) bool, order []int) {
	bits := make([]uint64, (total+63)/64)
	for _, i := range chosen {
		bits[i/64] |= 1 << (i % 64)
	}
	sorted := slices.Sorted(slices.Values(chosen))
	order = make([]int, len(chosen))
	for r, i := range chosen {
		order[r], _ = slices.BinarySearch(sorted, i)
	}
	// A read that gives more pairs than the first is caught by their count, after it.
	return func(i int) bool { return i < total && bits[i/64]&(1<<(i%64)) != 0 }, order
}

// spillStats counts what one read of the dialogues saw.
type spillStats struct{ dialogues, pairs int }

// spill reads the dialogues once, builds their pairs, and tokenises those keep takes (nil: all; keep sees
// a pair's position among all pairs built) into sp, a chunk at a time, on a goroutine of its own while
// the next chunk is read.
func (s PairStream) spill(sp *pairSpill, keep func(int) bool) (spillStats, error) {
	var st spillStats
	b, err := s.NewPairer()
	if err != nil {
		return st, err
	}
	type chunk struct {
		pairs []Pair
		base  int // the position of the chunk's first pair in the spill
	}
	chunks := make(chan chunk, 1)
	done := make(chan struct{})
	var failed atomic.Bool
	var tokErr error // the tokeniser's first error, read after done
	go func() {
		defer close(done)
		for c := range chunks {
			if failed.Load() {
				continue // drain, so that the reader never blocks
			}
			tp, err := tokenizePairsFrom(c.pairs, c.base, s.Fit, s.Tok, s.MaxLength, s.Truncation, s.Workers)
			if err == nil {
				err = sp.add(tp)
			}
			if err != nil {
				tokErr = err
				failed.Store(true)
			}
		}
	}()
	errStop := errors.New("tokeniser failed")
	buf := make([]Pair, 0, streamChunk)
	base := 0
	err = s.Each(func(d Dialogue) error {
		if failed.Load() {
			return errStop
		}
		st.dialogues++
		start := len(buf)
		buf = b.Add(buf, d)
		if keep != nil {
			kept := start
			for i, p := range buf[start:] {
				if keep(st.pairs + i) {
					buf[kept] = p
					kept++
				}
			}
			clear(buf[kept:]) // no text held past its use
			st.pairs += len(buf) - start
			buf = buf[:kept]
		} else {
			st.pairs += len(buf) - start
		}
		if len(buf) >= streamChunk {
			chunks <- chunk{pairs: buf, base: base}
			base += len(buf)
			buf = make([]Pair, 0, streamChunk)
		}
		return nil
	})
	if err == nil && len(buf) > 0 {
		chunks <- chunk{pairs: buf, base: base}
	}
	if err != nil {
		failed.Store(true) // what is queued is not worth tokenising
	}
	close(chunks)
	<-done
	if tokErr != nil && (err == nil || errors.Is(err, errStop)) {
		return st, tokErr
	}
	if err == nil {
		err = sp.flush()
	}
	return st, err
}

// pairSpill holds tokenised pairs on disk until the cache file is written: each side's ids as 4-byte
// values in a file of its own, and its rows' lengths in memory (the cache's index).
type pairSpill struct {
	q, r  *spillSide
	n     int   // pairs
	wide  bool  // an id does not fit in 2 bytes
	order []int // row r of the cache is the spill's row order[r]; nil: the spill's order
}

// spillSide is one side's spill file.
type spillSide struct {
	f     *os.File
	w     *bufio.Writer
	lens  []uint32
	total int    // ids written
	name  string // a file that could not be unlinked while open, removed on close
}

func newPairSpill(dir string) (*pairSpill, error) {
	q, err := newSpillSide(dir)
	if err != nil {
		return nil, err
	}
	r, err := newSpillSide(dir)
	if err != nil {
		q.close()
		return nil, err
	}
	return &pairSpill{q: q, r: r}, nil
}

func newSpillSide(dir string) (*spillSide, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, ".pairs-spill-*")
	if err != nil {
		return nil, err
	}
	s := &spillSide{f: f, w: bufio.NewWriterSize(f, 1<<20)}
	if os.Remove(f.Name()) != nil { // some systems keep an open file's name
		s.name = f.Name()
	}
	return s, nil
}

// add appends tokenised pairs.
func (sp *pairSpill) add(tp *TokenizedPairs) error {
	if err := tp.validate(); err != nil {
		return err
	}
	for i := range tp.Query {
		for _, side := range []struct {
			s   *spillSide
			ids []int32
		}{{sp.q, tp.Query[i]}, {sp.r, tp.Response[i]}} {
			var b [4]byte
			for _, id := range side.ids {
				if id < 0 || id > math.MaxUint16 {
					sp.wide = true
				}
				binary.LittleEndian.PutUint32(b[:], uint32(id))
				if _, err := side.s.w.Write(b[:]); err != nil {
					return fmt.Errorf("spill file: %w", err)
				}
			}
			side.s.lens = append(side.s.lens, uint32(len(side.ids)))
			side.s.total += len(side.ids)
		}
		sp.n++
	}
	return nil
}

func (sp *pairSpill) flush() error {
	for _, s := range []*spillSide{sp.q, sp.r} {
		if err := s.w.Flush(); err != nil {
			return fmt.Errorf("spill file: %w", err)
		}
	}
	return nil
}

func (sp *pairSpill) close() {
	sp.q.close()
	sp.r.close()
}

func (s *spillSide) close() {
	s.f.Close()
	if s.name != "" {
		os.Remove(s.name)
	}
}

func (sp *pairSpill) width() int {
	if sp.wide {
		return 4
	}
	return 2
}

// rows is the number of pairs the cache holds.
func (sp *pairSpill) rows() int {
	if sp.order != nil {
		return len(sp.order)
	}
	return sp.n
}

// row is the spill's row of the cache's row r.
func (sp *pairSpill) row(r int) int {
	if sp.order != nil {
		return sp.order[r]
	}
	return r
}

// encode writes the cache file of the spilled pairs, as encodeCache writes them from memory.
func (sp *pairSpill) encode(w io.Writer, digest [32]byte, desc []byte) error {
	if err := sp.flush(); err != nil {
		return err
	}
	crc := crc32.New(crcTable)
	cw := &cacheWriter{w: io.MultiWriter(w, crc)}
	width, n := sp.width(), sp.rows()
	if err := cw.head(digest, desc, n, width, sp.q.total, sp.r.total); err != nil {
		return err
	}
	for _, s := range []*spillSide{sp.q, sp.r} {
		for r := range n {
			cw.u32(s.lens[sp.row(r)])
		}
	}
	for _, s := range []*spillSide{sp.q, sp.r} {
		if err := s.copyIDs(cw, width, sp); err != nil {
			return err
		}
	}
	cw.flush()
	if cw.err != nil {
		return cw.err
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// copyIDs writes the side's ids in the cache's row order, width bytes each.
func (s *spillSide) copyIDs(cw *cacheWriter, width int, sp *pairSpill) error {
	put := func(b []byte) {
		for i := 0; i+4 <= len(b); i += 4 {
			v := binary.LittleEndian.Uint32(b[i:])
			if width == 2 {
				cw.u16(uint16(v))
			} else {
				cw.u32(v)
			}
		}
	}
	if sp.order == nil { // the spill's order: one sequential read
		r := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, int64(s.total)*4), 1<<20)
		buf := make([]byte, 1<<16)
		for left := s.total * 4; left > 0; {
			k := min(left, len(buf))
			if _, err := io.ReadFull(r, buf[:k]); err != nil {
				return fmt.Errorf("spill file: %w", err)
			}
			put(buf[:k])
			left -= k
		}
		return cw.err
	}
	offsets := make([]int64, len(s.lens)+1)
	for i, l := range s.lens {
		offsets[i+1] = offsets[i] + int64(l)
	}
	var buf []byte
	for r := range sp.order {
		i := sp.order[r]
		buf = slices.Grow(buf[:0], int(s.lens[i])*4)[:int(s.lens[i])*4]
		if _, err := s.f.ReadAt(buf, offsets[i]*4); err != nil {
			return fmt.Errorf("spill file: %w", err)
		}
		put(buf)
		if cw.err != nil {
			return cw.err
		}
	}
	return nil
}

// size is the length of the cache file encode writes.
func (sp *pairSpill) size(desc []byte) int64 {
	return cacheHeadLen + int64(len(desc)) + 28 + 8*int64(sp.rows()) + int64(sp.width())*int64(sp.q.total+sp.r.total) + 4
}

// decode reads the spilled pairs into memory, through the cache format, without a file.
func (sp *pairSpill) decode(digest [32]byte, desc []byte) (*TokenizedPairs, error) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(sp.encode(pw, digest, desc))
	}()
	tp, _, err := decodeCache(pr, sp.size(desc), &digest)
	pr.Close() // the writer stops at its next write
	<-done
	return tp, err
}
