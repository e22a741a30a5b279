package tokenizers

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// wordPieceSegment runs BERT's BasicTokenizer and then WordPiece over one
// stretch of text that holds no added tokens. The normalisation is done
// here rather than by sugarme's normaliser, which strips accents without
// decomposing first, does not treat no-break spaces as spaces and panics
// when lowercasing changes a character's byte length (İ, ẞ, K).
func (t *Tokenizer) wordPieceSegment(text string, out *encoded) error {
	if !t.basicTokenize {
		for _, w := range strings.FieldsFunc(text, pyIsSpace) {
			if err := t.wordPiece(w, out); err != nil {
				return err
			}
		}
		return nil
	}
	for _, word := range strings.FieldsFunc(t.cleanText(text), pyIsSpace) {
		keep := t.allSpecial[word] || t.neverSplit[word]
		if !keep {
			if t.doLowerCase {
				word = pyLower(word)
				if t.stripAccents == nil || *t.stripAccents {
					word = stripAccents(word)
				}
			} else if t.stripAccents != nil && *t.stripAccents {
				word = stripAccents(word)
			}
			keep = t.allSpecial[word] || t.neverSplit[word]
		}
		if err := t.punctSplit(word, keep, out); err != nil {
			return err
		}
	}
	return nil
}

// cleanText is BasicTokenizer._clean_text plus _tokenize_chinese_chars:
// drop NUL, U+FFFD and control characters, turn whitespace into spaces,
// put spaces around CJK ideographs.
func (t *Tokenizer) cleanText(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || c < 0x20 || c == 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		switch {
		case r == 0 || r == 0xFFFD || bertIsControl(r):
		case bertIsWhitespace(r):
			b.WriteByte(' ')
		case t.chineseChars && bertIsChinese(r):
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// punctSplit is _run_split_on_punc: every punctuation character becomes a
// word of its own. Words emptied by accent stripping vanish, and words
// still containing whitespace are split again, as HF's final
// whitespace_tokenize does.
func (t *Tokenizer) punctSplit(word string, keep bool, out *encoded) error {
	if keep {
		return t.wordPiece(word, out)
	}
	start := 0
	for i, r := range word {
		if !bertIsPunct(r) {
			continue
		}
		if err := t.wordPieceFields(word[start:i], out); err != nil {
			return err
		}
		end := i + utf8.RuneLen(r)
		if err := t.wordPiece(word[i:end], out); err != nil {
			return err
		}
		start = end
	}
	return t.wordPieceFields(word[start:], out)
}

func (t *Tokenizer) wordPieceFields(s string, out *encoded) error {
	if s == "" {
		return nil
	}
	for _, w := range strings.FieldsFunc(s, pyIsSpace) {
		if err := t.wordPiece(w, out); err != nil {
			return err
		}
	}
	return nil
}

// wordPiece emits the WordPiece tokens of one word through sugarme's
// WordPiece model (greedy longest match, "##" continuations, [UNK] for
// words over 100 characters). Words in the configured never_split list
// are emitted whole.
func (t *Tokenizer) wordPiece(word string, out *encoded) error {
	if t.neverSplit[word] {
		id, ok := t.vocab[word]
		if !ok {
			id, ok = t.vocab[t.special["unk_token"].Content]
		}
		if !ok {
			return fmt.Errorf("never_split token %q and the unknown token are not in the vocabulary", word)
		}
		out.add(word, id)
		return nil
	}
	toks, err := t.wp.Tokenize(word)
	if err != nil {
		return fmt.Errorf("wordpiece %q: %w", word, err)
	}
	for _, tk := range toks {
		out.add(tk.Value, tk.Id)
	}
	return nil
}
