package datasets

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"convrep/tokenizers"
)

// CacheKey names everything tokenised pairs depend on. Its digest names
// the cache file and is checked on load, so a change to any of these
// builds afresh instead of reusing stale ids.
type CacheKey struct {
	// Corpora are the corpus names in reading order.
	Corpora []string
	// CorpusFiles are the files and folders the dialogues were read from;
	// folders count with every file below them.
	CorpusFiles []string
	// TokenizerDir is the folder the tokenizer was loaded from; the
	// tokenizer files in it (vocabulary, merges, tokenizer.json, configs,
	// added tokens) are hashed, model weights beside them are not.
	TokenizerDir string
	// Tokenizer is the tokenizer in use. Its id table, special tokens and
	// the ids it gives a set of probe texts are hashed, so tokens added at
	// run time, and changes to the tokenizers package, count too.
	Tokenizer *tokenizers.Tokenizer
	// Pairs is how the pairs were built, as the objective that builds them records it.
	Pairs PairKey
	// MaxLength and Truncation are TokenizePairs' settings.
	MaxLength  int
	Truncation tokenizers.Truncation
	// MergeSpeakers is whether the reader merged consecutive turns of one
	// speaker into one utterance.
	MergeSpeakers bool
	// MetaLWOZMultiWOZ is whether MetaLWOZ's MultiWOZ 2.0 dialogues were kept (ReadOptions).
	MetaLWOZMultiWOZ bool
	// Files are the user's own dialogue files (data.files), nil without: each file is hashed whole,
	// whatever its size, and the column and speaker mapping is part of the key.
	Files *FileSet
	// Extra holds any other setting that changes the pairs, as the caller
	// spells it ("domains=restaurant,taxi").
	Extra []string
	// Streamed marks a cache built by CachedPairsStream, whose construction
	// (and hold-out, Holdout) is another than an in-memory build's.
	Streamed bool
	// Holdout names the rule and the side of a validation hold-out that
	// chose the dialogues, as the caller spells it; "" without one, or where
	// the cache folder already tells the hold-outs apart.
	Holdout string
}

// PairKey is the pair construction in a cache key: the settings of the objective that builds the pairs,
// with their defaults filled in by it (objectives/dse's PairOptions.Key), so that two spellings of one
// setting share a cache. Its fields are those the key has always recorded, so that caches built before
// the construction moved to its objective keep their names.
type PairKey struct {
	// Variant names the construction; it must be set.
	Variant string
	// MinWords is the word filter, Sep what joins the utterances of a query, BothDirections whether each
	// pair is also given reversed.
	MinWords       int
	Sep            string
	BothDirections bool
	// QueryCut is how a query of several utterances is fitted to its budget; "" where no query joins
	// several (the key then records none, as keys did before the setting).
	QueryCut string
}

// cacheFormatVersion changes whenever the file layout or the meaning of
// its contents (pair construction, tokenisation call) changes.
const cacheFormatVersion = 2 // 2: a k-1 query has k times max_length, cut from the left; MetaLWOZ's MultiWOZ dropped by default

// contentHashLimit bounds the corpus files hashed by content; larger ones
// are known by path, size and modification time, which is what cheap means
// for multi-gigabyte corpora.
const contentHashLimit = 256 << 20

// keyRecord is the canonical form of a key: its JSON is hashed, and kept
// in the cache header so a person can see what a file was built from.
type keyRecord struct {
	Format        int          `json:"format"`
	Corpora       []string     `json:"corpora"`
	CorpusFiles   []fileRecord `json:"corpus_files"`
	TokenizerDir  []fileRecord `json:"tokenizer_files"`
	Tokenizer     string       `json:"tokenizer_state"`
	Variant       string       `json:"variant"`
	MinWords      int          `json:"min_words"`
	Sep           string       `json:"sep"`
	Both          bool         `json:"both_directions"`
	MaxLength     int          `json:"max_length"`
	Truncation    string       `json:"truncation"`
	MergeSpeakers bool         `json:"merge_speakers"`
	MetaLWOZMWOZ  bool         `json:"metalwoz_multiwoz"`
	Extra         []string     `json:"extra,omitempty"`
	QueryCut      string       `json:"query_cut,omitempty"` // k-1 variants only: the others' keys stay as they were
	Files         *filesRecord `json:"files,omitempty"`     // data.files only: the others' keys stay as they were
	Build         string       `json:"build,omitempty"`     // "streamed" (CachedPairsStream); "" for the in-memory build
	Holdout       string       `json:"holdout,omitempty"`
}

// filesRecord is the user's dialogue files in a key: each file's size and SHA-256, and how rows are read.
type filesRecord struct {
	Files    []fileRecord `json:"files"`
	Corpora  []string     `json:"corpora"`
	Columns  Columns      `json:"columns"`
	Speakers Speakers     `json:"speakers"`
}

// fileRecord identifies one file: by content hash, or by path, size and
// modification time when it is too large to hash.
type fileRecord struct {
	Name    string `json:"name"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256,omitempty"`
	Path    string `json:"path,omitempty"`
	ModTime int64  `json:"mtime_ns,omitempty"`
}

// Digest is the key's SHA-256 in hex, the name of what it was built from.
func (k CacheKey) Digest() (string, error) {
	d, _, err := k.digest()
	return hex.EncodeToString(d[:]), err
}

// digest hashes the key; it also returns the canonical record as JSON.
func (k CacheKey) digest() ([32]byte, []byte, error) {
	var zero [32]byte
	if k.Tokenizer == nil {
		return zero, nil, fmt.Errorf("cache key: no tokenizer")
	}
	if k.TokenizerDir == "" {
		return zero, nil, fmt.Errorf("cache key: no tokenizer folder")
	}
	if len(k.CorpusFiles) == 0 && k.Files == nil {
		return zero, nil, fmt.Errorf("cache key: no corpus files")
	}
	if k.Pairs.Variant == "" {
		return zero, nil, fmt.Errorf("cache key: no pair construction")
	}
	p := k.Pairs
	rec := keyRecord{
		Format: cacheFormatVersion, Corpora: append([]string{}, k.Corpora...),
		Variant: p.Variant, MinWords: p.MinWords, Sep: p.Sep, Both: p.BothDirections,
		MaxLength: k.MaxLength, Truncation: truncationName(k.Truncation),
		MergeSpeakers: k.MergeSpeakers, MetaLWOZMWOZ: k.MetaLWOZMultiWOZ, Extra: k.Extra, Holdout: k.Holdout,
	}
	if k.Streamed {
		rec.Build = "streamed"
	}
	rec.QueryCut = p.QueryCut
	var err error
	for _, root := range k.CorpusFiles {
		fr, err := fileRecords(root, contentHashLimit)
		if err != nil {
			return zero, nil, fmt.Errorf("cache key: corpus files: %w", err)
		}
		rec.CorpusFiles = append(rec.CorpusFiles, fr...)
	}
	if k.Files != nil {
		if rec.Files, err = filesKey(*k.Files); err != nil {
			return zero, nil, fmt.Errorf("cache key: data files: %w", err)
		}
	}
	fr, err := tokenizerFiles(k.TokenizerDir)
	if err != nil {
		return zero, nil, fmt.Errorf("cache key: tokenizer files: %w", err)
	}
	rec.TokenizerDir = fr
	if rec.Tokenizer, err = tokenizerState(k.Tokenizer); err != nil {
		return zero, nil, fmt.Errorf("cache key: %w", err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return zero, nil, fmt.Errorf("cache key: %w", err)
	}
	return sha256.Sum256(b), b, nil
}

// filesKey records a file set: every file it reads, hashed whole (a cheaper key could miss an edit that
// keeps the size and the modification time), and the mapping with its defaults filled in, so that two
// spellings of one mapping share a cache.
func filesKey(s FileSet) (*filesRecord, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	list, err := s.files()
	if err != nil {
		return nil, err
	}
	n := s.normalized()
	rec := &filesRecord{Columns: n.Columns, Speakers: n.Speakers}
	// Which columns were named matters too: a named turn or domain column must be there, a default one
	// need not.
	raw := s.Columns.specs()
	if raw[colTurn].optional {
		rec.Columns.Turn += "?"
	}
	if raw[colDomain].optional {
		rec.Columns.Domain += "?"
	}
	for _, f := range list {
		fr, err := fileRecords(f.path, -1)
		if err != nil {
			return nil, err
		}
		rec.Files = append(rec.Files, fr...)
		rec.Corpora = append(rec.Corpora, f.corpus) // the name the dialogues take, which the hold-out keys by
	}
	return rec, nil
}

func truncationName(t tokenizers.Truncation) string {
	switch t {
	case tokenizers.TruncateRight:
		return "right"
	case tokenizers.TruncateLeft:
		return "left"
	}
	return fmt.Sprintf("truncation(%d)", int(t))
}

// fileRecords lists root (a file, or a folder walked in lexical order)
// with names relative to root's parent, so the same data found through
// another path gives the same key. Files above limit bytes (limit >= 0)
// are recorded by path and time instead of content.
func fileRecords(root string, limit int64) ([]fileRecord, error) {
	base := filepath.Dir(filepath.Clean(root))
	var out []fileRecord
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Stat(path) // follows links to files
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(base, path)
		if err != nil {
			return err
		}
		fr := fileRecord{Name: filepath.ToSlash(rel), Size: info.Size()}
		if limit >= 0 && info.Size() > limit {
			if fr.Path, err = filepath.Abs(path); err != nil {
				return err
			}
			fr.ModTime = info.ModTime().UnixNano()
		} else if fr.SHA256, err = hashFile(path); err != nil {
			return err
		}
		out = append(out, fr)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no files", root)
	}
	return out, nil
}

// tokenizerFileNames are the files tokenizers.Load reads.
var tokenizerFileNames = []string{
	"vocab.txt", "vocab.json", "merges.txt", "tokenizer.json",
	"tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
}

// tokenizerFiles hashes the tokenizer files present in dir.
func tokenizerFiles(dir string) ([]fileRecord, error) {
	var out []fileRecord
	for _, name := range tokenizerFileNames {
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sum, err := hashFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, fileRecord{Name: name, Size: info.Size(), SHA256: sum})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds none of %v", dir, tokenizerFileNames)
	}
	return out, nil
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// tokenizerProbes exercise casing, accents, punctuation, CJK, emoji,
// numbers, long words, whitespace and the special tokens: a change in how
// the tokenizers package encodes shows up in their ids.
var tokenizerProbes = []string{
	"", "Hello, World!", "I'd like a TABLE for 2 at 7:30pm, please.",
	"Café naïve résumé Ångström", "東京で寿司を食べたい", "pizza 🍕 & beer 🍺",
	"antidisestablishmentarianism supercalifragilisticexpialidocious",
	"  spaces\tand\nnewlines  ", "[CLS] a [SEP] b [SEP] [MASK] [PAD] [UNK]",
	"<s> a </s></s> b </s> <mask> <pad> <unk>", "[USR] hi [SYS] hello",
	"e-mail: someone@example.com; url: www.example.com/a?b=c",
	"\u00a0\u200b\u3000 zero\u200dwidth", "ÉCOLE Straße İstanbul ǅ",
}

// tokenizerState hashes what the tokenizer turns text into.
func tokenizerState(tok *tokenizers.Tokenizer) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "kind=%v vocab=%d pad=%d mask=%d max=%d\n",
		tok.Kind(), tok.VocabSize(), tok.PadID(), tok.MaskID(), tok.ModelMaxLength())
	for _, name := range []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"} {
		s, ok := tok.SpecialToken(name)
		fmt.Fprintf(h, "%s=%q %v\n", name, s, ok)
	}
	for id := range int64(tok.VocabSize()) {
		s, _ := tok.IDToken(id)
		fmt.Fprintf(h, "%q %v\n", s, tok.IsSpecial(id))
	}
	for _, p := range tokenizerProbes {
		ids, err := tok.Encode(p)
		if err != nil {
			return "", fmt.Errorf("tokenizer probe %q: %w", p, err)
		}
		fmt.Fprintln(h, ids)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
