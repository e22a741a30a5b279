package tokenizers

import (
	"fmt"
	"unicode/utf8"
)

// encoded collects ids (and, when asked, token strings) of one text.
type encoded struct {
	ids      []int64
	toks     []string
	keepToks bool
}

func (e *encoded) add(tok string, id int) {
	e.ids = append(e.ids, int64(id))
	if e.keepToks {
		e.toks = append(e.toks, tok)
	}
}

// Tokenize returns the tokens of text without special tokens around it,
// like HF's tok.tokenize(text).
func (t *Tokenizer) Tokenize(text string) ([]string, error) {
	e, err := t.encodeText(text, true)
	return e.toks, err
}

// Encode returns the ids of text with the model's special tokens
// ([CLS] … [SEP], <s> … </s>), like HF's tok.encode(text).
func (t *Tokenizer) Encode(text string) ([]int64, error) {
	e, err := t.encodeText(text, false)
	if err != nil {
		return nil, err
	}
	ids, _ := t.withSpecials(e.ids, nil, false)
	return ids, nil
}

// EncodePair returns the ids and token type ids of a sentence pair:
// [CLS] a [SEP] b [SEP] with types 0…0 1…1 for BERT, <s> a </s></s> b </s>
// with all types 0 for RoBERTa (it has a single type embedding).
func (t *Tokenizer) EncodePair(a, b string) (ids, typeIDs []int64, err error) {
	ea, err := t.encodeText(a, false)
	if err != nil {
		return nil, nil, err
	}
	eb, err := t.encodeText(b, false)
	if err != nil {
		return nil, nil, err
	}
	ids, typeIDs = t.withSpecials(ea.ids, eb.ids, true)
	return ids, typeIDs, nil
}

// numSpecials is how many special tokens withSpecials adds.
func (t *Tokenizer) numSpecials(pair bool) int {
	switch {
	case !pair:
		return 2
	case t.kind == ByteLevelBPE:
		return 4
	}
	return 3
}

// withSpecials is HF's build_inputs_with_special_tokens and
// create_token_type_ids_from_sequences.
func (t *Tokenizer) withSpecials(a, b []int64, pair bool) (ids, types []int64) {
	n := len(a) + len(b) + t.numSpecials(pair)
	ids = make([]int64, 0, n)
	cls, sep := int64(t.clsID), int64(t.sepID)
	ids = append(ids, cls)
	ids = append(ids, a...)
	ids = append(ids, sep)
	if pair {
		if t.kind == ByteLevelBPE {
			ids = append(ids, sep)
		}
		ids = append(ids, b...)
		ids = append(ids, sep)
	}
	types = make([]int64, len(ids))
	if pair && t.kind == WordPiece {
		for i := len(a) + 2; i < len(types); i++ {
			types[i] = 1
		}
	}
	return ids, types
}

// encodeText tokenizes text as HF's slow tokenize + convert_tokens_to_ids:
// lowercase outside the added tokens (uncased WordPiece), cut the added
// tokens out, then run the model's pre-tokenization and subword model on
// each stretch in between. Panics from below are turned into errors.
func (t *Tokenizer) encodeText(text string, keepToks bool) (e encoded, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tokenize %.60q: recovered panic: %v", text, r)
		}
	}()
	e.keepToks = keepToks
	s := validUTF8(text)
	if t.kind == ByteLevelBPE && t.addPrefixSpace && s != "" {
		if r, _ := utf8.DecodeRuneInString(s); !pyIsSpace(r) {
			s = " " + s
		}
	}
	if t.kind == WordPiece && t.doLowerCase {
		s = t.ns.lowerOutside(s)
	}
	var segBuf [8]segment
	for _, sg := range t.ns.split(s, segBuf[:0]) {
		switch {
		case sg.tok != nil:
			id, ok := t.tokenID(sg.tok.Content)
			if !ok {
				if id, ok = t.tokenID(t.special["unk_token"].Content); !ok {
					return e, fmt.Errorf("tokenize %.60q: token %q has no id", text, sg.tok.Content)
				}
			}
			e.add(sg.tok.Content, id)
		case sg.text == "":
		case t.kind == WordPiece:
			err = t.wordPieceSegment(sg.text, &e)
		default:
			err = t.bpeSegment(sg.text, &e)
		}
		if err != nil {
			return e, fmt.Errorf("tokenize %.60q: %w", text, err)
		}
	}
	return e, nil
}

// bpeSegment splits with GPT-2's pattern, maps bytes to their printable
// stand-ins and applies the BPE merges to each piece.
func (t *Tokenizer) bpeSegment(text string, out *encoded) error {
	var buf []byte
	var err error
	splitGPT2(text, func(piece string) {
		if err != nil {
			return
		}
		buf = appendByteLevel(buf[:0], piece)
		var ids []int32
		if ids, err = t.bpe.wordIDs(string(buf)); err != nil {
			return
		}
		for _, id := range ids {
			out.add(t.bpe.tokens[id], int(id))
		}
	})
	return err
}
