package tokenizers

import (
	"github.com/sugarme/tokenizer"
)

// Kind is the subword algorithm of a tokenizer.
type Kind int

const (
	// WordPiece is BERT's and DistilBERT's tokenizer (vocab.txt).
	WordPiece Kind = iota
	// ByteLevelBPE is RoBERTa's tokenizer (vocab.json + merges.txt).
	ByteLevelBPE
)

func (k Kind) String() string {
	switch k {
	case WordPiece:
		return "WordPiece"
	case ByteLevelBPE:
		return "ByteLevelBPE"
	}
	return "Kind(?)"
}

// Tokenizer turns text into model ids the way HuggingFace's slow
// BertTokenizer / DistilBertTokenizer / RobertaTokenizer do. Encoding is
// safe for concurrent use; AddSpecialTokens and AddTokens are not safe to
// call while other goroutines encode.
type Tokenizer struct {
	kind Kind

	vocab   map[string]int // base vocabulary
	tokens  []string       // base id → token
	added   []string       // added tokens; ids len(tokens)+i
	addedID map[string]int

	special    map[string]addedToken // named slots: cls_token, sep_token, ...
	additional []addedToken          // additional_special_tokens
	plain      []addedToken          // added, not special (add_tokens)
	ns         *noSplit
	allSpecial map[string]bool // contents of special + additional
	specialIDs map[int64]bool  // ids of allSpecial (HF's all_special_ids)
	clsID      int
	sepID      int
	padID      int

	// WordPiece options (tokenizer_config.json).
	wp            tokenizer.Model // sugarme's WordPiece
	doLowerCase   bool
	stripAccents  *bool // nil: follow doLowerCase
	chineseChars  bool
	basicTokenize bool
	neverSplit    map[string]bool // config never_split

	// Byte-level BPE.
	bpe            *bpeModel
	addPrefixSpace bool

	modelMaxLength int            // 0 when unknown
	config         map[string]any // tokenizer_config.json as read, for Save
}

// Kind returns the subword algorithm.
func (t *Tokenizer) Kind() Kind { return t.kind }

// VocabSize is the base vocabulary plus added tokens (HF's len(tokenizer)),
// the size an embedding table needs.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) + len(t.added) }

// PadID is the padding token's id (0 for BERT, 1 for RoBERTa), or -1.
func (t *Tokenizer) PadID() int64 { return int64(t.padID) }

// MaskID is the mask token's id ([MASK] 103, <mask> 50264), or -1.
func (t *Tokenizer) MaskID() int64 { return int64(t.slotID("mask_token")) }

// IsSpecial reports whether id is a special token's ([CLS], [SEP], [PAD],
// added special tokens, ...): MLM masking must leave those alone.
func (t *Tokenizer) IsSpecial(id int64) bool { return t.specialIDs[id] }

// ModelMaxLength is tokenizer_config.json's model_max_length, 0 if unset.
func (t *Tokenizer) ModelMaxLength() int { return t.modelMaxLength }

// SpecialToken returns the token in a named slot such as "cls_token",
// "sep_token", "pad_token", "mask_token", "unk_token".
func (t *Tokenizer) SpecialToken(name string) (string, bool) {
	a, ok := t.special[name]
	return a.Content, ok
}

// TokenID returns the id of a token string (added tokens first, as HF).
func (t *Tokenizer) TokenID(tok string) (int64, bool) {
	id, ok := t.tokenID(tok)
	return int64(id), ok
}

// IDToken returns the token string of an id.
func (t *Tokenizer) IDToken(id int64) (string, bool) {
	switch {
	case id >= 0 && id < int64(len(t.tokens)):
		return t.tokens[id], true
	case id >= int64(len(t.tokens)) && id < int64(t.VocabSize()):
		return t.added[id-int64(len(t.tokens))], true
	}
	return "", false
}

func (t *Tokenizer) tokenID(tok string) (int, bool) {
	if id, ok := t.addedID[tok]; ok {
		return id, true
	}
	id, ok := t.vocab[tok]
	return id, ok
}

// AddSpecialTokens registers additional special tokens such as "[USR]"
// and "[SYS]" (HF add_special_tokens({"additional_special_tokens": ...})):
// they match case-sensitively anywhere in the text, are never lowercased
// or split, and take new ids after the vocabulary unless they already have
// one. It returns the number of new ids.
func (t *Tokenizer) AddSpecialTokens(tokens ...string) int {
	n := 0
	for _, s := range tokens {
		if s == "" {
			continue
		}
		if !t.allSpecial[s] {
			t.additional = append(t.additional, plainToken(s))
		}
		if t.newID(s) {
			n++
		}
	}
	t.refresh()
	return n
}

// AddTokens registers ordinary added tokens (HF add_tokens, as TOD-BERT's
// pretraining does with "[SYS]" and "[USR]"). With do_lower_case they are
// lowercased first, so "[USR]" becomes "[usr]" and also matches "[USR]" in
// text. Tokens already in the vocabulary are ignored. It returns the
// number of new ids.
func (t *Tokenizer) AddTokens(tokens ...string) int {
	n := 0
	for _, s := range tokens {
		if s == "" {
			continue
		}
		if t.kind == WordPiece && t.doLowerCase {
			s = pyLower(s)
		}
		if t.newID(s) {
			t.plain = append(t.plain, plainToken(s))
			n++
		}
	}
	t.refresh()
	return n
}

// newID gives s the next id unless it already has one or is the unknown token.
func (t *Tokenizer) newID(s string) bool {
	if _, ok := t.tokenID(s); ok {
		return false
	}
	if unk, ok := t.special["unk_token"]; ok && unk.Content == s {
		return false
	}
	t.addedID[s] = t.VocabSize()
	t.added = append(t.added, s)
	return true
}

// refresh rebuilds what derives from the special and added tokens.
func (t *Tokenizer) refresh() {
	t.allSpecial = map[string]bool{}
	var all []addedToken
	all = append(all, t.plain...)
	for _, name := range specialNames {
		if a, ok := t.special[name]; ok {
			all = append(all, a)
			t.allSpecial[a.Content] = true
		}
	}
	for _, a := range t.additional {
		all = append(all, a)
		t.allSpecial[a.Content] = true
	}
	// Later entries win when a string fills two roles, so the specials'
	// flags override a plain added token's.
	t.ns = newNoSplit(all)
	t.specialIDs = map[int64]bool{}
	for s := range t.allSpecial {
		if id, ok := t.tokenID(s); ok {
			t.specialIDs[int64(id)] = true
		}
	}
	t.clsID, t.sepID, t.padID = t.slotID("cls_token"), t.slotID("sep_token"), t.slotID("pad_token")
}

func (t *Tokenizer) slotID(name string) int {
	if a, ok := t.special[name]; ok {
		if id, ok := t.tokenID(a.Content); ok {
			return id
		}
	}
	return -1
}
