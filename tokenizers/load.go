package tokenizers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sugarme/tokenizer/model"
	"github.com/sugarme/tokenizer/model/wordpiece"
)

// HF file names.
const (
	vocabTxtFile      = "vocab.txt"
	vocabJSONFile     = "vocab.json"
	mergesFile        = "merges.txt"
	tokenizerJSONFile = "tokenizer.json"
	configFile        = "tokenizer_config.json"
	specialMapFile    = "special_tokens_map.json"
	addedTokensFile   = "added_tokens.json"
)

// Load reads a HuggingFace tokenizer directory. It uses vocab.txt
// (WordPiece) or vocab.json + merges.txt (byte-level BPE) when present,
// otherwise tokenizer.json, and applies tokenizer_config.json,
// special_tokens_map.json and added_tokens.json as from_pretrained does.
func Load(dir string) (*Tokenizer, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t := &Tokenizer{
		addedID:       map[string]int{},
		neverSplit:    map[string]bool{},
		chineseChars:  true,
		basicTokenize: true,
	}
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	var tj *tokenizerJSON
	switch {
	case has(vocabTxtFile):
		t.kind = WordPiece
		t.doLowerCase = true // BertTokenizer's default
	case has(vocabJSONFile) && has(mergesFile):
		t.kind = ByteLevelBPE
	case has(tokenizerJSONFile):
		var err error
		if tj, err = readTokenizerJSON(filepath.Join(dir, tokenizerJSONFile)); err != nil {
			return nil, err
		}
		t.kind = tj.kind
	default:
		return nil, fmt.Errorf("load tokenizer from %s: found neither %s, %s + %s nor %s",
			dir, vocabTxtFile, vocabJSONFile, mergesFile, tokenizerJSONFile)
	}

	cfgPath := filepath.Join(dir, configFile)
	cfg, err := readJSONMap(cfgPath)
	if err != nil {
		return nil, err
	}
	t.config = cfg
	t.defaultSpecials()
	if tj != nil {
		tj.applyTo(t)
	}
	if cfg != nil {
		if err := t.applyOptions(cfg, cfgPath); err != nil {
			return nil, err
		}
		if t.kind == ByteLevelBPE {
			t.doLowerCase = false // RobertaTokenizer has no such option
		}
		if err := t.applySpecials(cfg, cfgPath); err != nil {
			return nil, err
		}
	}
	stmPath := filepath.Join(dir, specialMapFile)
	stm, err := readJSONMap(stmPath)
	if err != nil {
		return nil, err
	}
	if stm != nil {
		if err := t.applySpecials(stm, stmPath); err != nil {
			return nil, err
		}
	}

	switch {
	case tj != nil:
		err = t.setModel(tj.vocab, tj.merges, filepath.Join(dir, tokenizerJSONFile))
	case t.kind == WordPiece:
		err = t.loadVocabTxt(filepath.Join(dir, vocabTxtFile))
	default:
		err = t.loadBPEFiles(filepath.Join(dir, vocabJSONFile), filepath.Join(dir, mergesFile))
	}
	if err != nil {
		return nil, err
	}
	t.refresh()

	if tj != nil {
		if err := t.addSaved(tj.added, filepath.Join(dir, tokenizerJSONFile)); err != nil {
			return nil, err
		}
	}
	if err := t.loadAddedTokens(filepath.Join(dir, addedTokensFile)); err != nil {
		return nil, err
	}
	if t.clsID < 0 || t.sepID < 0 {
		return nil, fmt.Errorf("load tokenizer from %s: the cls/sep tokens %q/%q are not in the vocabulary",
			dir, t.special["cls_token"].Content, t.special["sep_token"].Content)
	}
	return t, nil
}

// loadVocabTxt reads one token per line; the line number is the id.
func (t *Tokenizer) loadVocabTxt(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	// Python's universal newlines: \r\n and \r end lines too.
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := strings.Split(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	vocab := make(map[string]int, len(lines))
	for i, tok := range lines {
		if j, dup := vocab[tok]; dup {
			return fmt.Errorf("read %s: line %d repeats token %q of line %d", path, i+1, tok, j+1)
		}
		vocab[tok] = i
	}
	return t.setModel(vocab, nil, path)
}

// loadBPEFiles reads vocab.json and merges.txt.
func (t *Tokenizer) loadBPEFiles(vocabPath, mergesPath string) error {
	b, err := os.ReadFile(vocabPath)
	if err != nil {
		return fmt.Errorf("read %s: %w", vocabPath, err)
	}
	var vocab map[string]int
	if err := json.Unmarshal(b, &vocab); err != nil {
		return fmt.Errorf("parse %s: %w", vocabPath, err)
	}
	mb, err := os.ReadFile(mergesPath)
	if err != nil {
		return fmt.Errorf("read %s: %w", mergesPath, err)
	}
	return t.setModel(vocab, parseMerges(mb), vocabPath)
}

// parseMerges reads merges.txt as HF's slow tokenizer does: the first line
// (the "#version" header) and the text after the last newline are dropped,
// and lines that are not exactly two fields never match.
func parseMerges(b []byte) [][2]string {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	b = bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 {
		return nil
	}
	lines = lines[1 : len(lines)-1]
	out := make([][2]string, 0, len(lines))
	for _, l := range lines {
		f := strings.FieldsFunc(l, pyIsSpace)
		if len(f) == 2 {
			out = append(out, [2]string{f[0], f[1]})
		}
	}
	return out
}

// setModel builds the subword model from a vocabulary (and merges for BPE).
func (t *Tokenizer) setModel(vocab map[string]int, merges [][2]string, path string) error {
	t.vocab = vocab
	t.tokens = make([]string, len(vocab))
	seen := make([]bool, len(vocab))
	for tok, id := range vocab {
		if id < 0 || id >= len(vocab) || seen[id] {
			return fmt.Errorf("%s: token %q has id %d, duplicated or outside 0..%d", path, tok, id, len(vocab)-1)
		}
		seen[id] = true
		t.tokens[id] = tok
	}
	unk := t.special["unk_token"].Content
	if t.kind == WordPiece {
		v := model.Vocab(vocab)
		wp := wordpiece.NewWordPieceBuilder().Vocab(&v).UnkToken(unk).
			ContinuingSubwordPrefix("##").MaxInputCharsPerWord(100).Build()
		t.wp = wp
		return nil
	}
	m, err := newBPEModel(vocab, merges, unk)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	t.bpe = m
	return nil
}

// loadAddedTokens reads added_tokens.json ({token: id}), if present.
func (t *Tokenizer) loadAddedTokens(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var m map[string]int
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	list := make([]savedToken, 0, len(m))
	for tok, id := range m {
		list = append(list, savedToken{content: tok, id: id})
	}
	return t.addSaved(list, path)
}

type savedToken struct {
	content string
	id      int
	special bool // marked special where it was saved (tokenizer.json)
}

// addSaved re-adds saved tokens in id order, as from_pretrained does: ids
// must continue the vocabulary without gaps; tokens listed as special stay
// as they are, the others go through AddTokens (lowercased if uncased).
// Tokens that already have their id (e.g. specials inside the vocabulary
// in tokenizer.json) are skipped.
func (t *Tokenizer) addSaved(list []savedToken, path string) error {
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	for _, s := range list {
		if id, ok := t.tokenID(s.content); ok && id == s.id {
			continue
		}
		if s.id != t.VocabSize() {
			return fmt.Errorf("%s: added token %q has id %d, want %d (ids must follow the vocabulary without gaps)",
				path, s.content, s.id, t.VocabSize())
		}
		var n int
		if s.special || t.allSpecial[s.content] {
			n = t.AddSpecialTokens(s.content)
		} else {
			n = t.AddTokens(s.content)
		}
		if n != 1 {
			return fmt.Errorf("%s: added token %q (id %d) clashes with an existing token", path, s.content, s.id)
		}
	}
	return nil
}
