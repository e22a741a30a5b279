package tokenizers

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Decode turns ids back into text like HF's slow tok.decode(ids,
// skip_special_tokens=skipSpecial) with the 4.29 default
// clean_up_tokenization_spaces: added tokens are kept apart from the
// subword text and everything is joined with spaces.
func (t *Tokenizer) Decode(ids []int64, skipSpecial bool) (string, error) {
	var parts, run []string
	flush := func() {
		if len(run) > 0 {
			parts = append(parts, t.tokensToString(run))
			run = run[:0]
		}
	}
	for _, id := range ids {
		if skipSpecial && t.specialIDs[id] {
			continue
		}
		tok, ok := t.IDToken(id)
		if !ok {
			return "", fmt.Errorf("decode: id %d is outside the vocabulary of %d", id, t.VocabSize())
		}
		if _, added := t.addedID[tok]; added {
			flush()
			parts = append(parts, tok)
			continue
		}
		run = append(run, tok)
	}
	flush()
	text := strings.Join(parts, " ")
	if clean, ok := t.config["clean_up_tokenization_spaces"].(bool); !ok || clean {
		text = cleanUpTokenization(text)
	}
	return text, nil
}

// tokensToString is convert_tokens_to_string: "##" pieces are glued for
// WordPiece; byte-level tokens are mapped back to bytes and decoded with
// Python's errors="replace".
func (t *Tokenizer) tokensToString(toks []string) string {
	if t.kind == WordPiece {
		return strings.TrimSpace(strings.ReplaceAll(strings.Join(toks, " "), " ##", ""))
	}
	var b []byte
	for _, tok := range toks {
		for _, r := range tok {
			if c, ok := runeBytes[r]; ok {
				b = append(b, c)
			}
		}
	}
	return pyDecodeUTF8(b)
}

// cleanUpTokenization is HF's clean_up_tokenization: the replacements are
// applied one after the other, in this order.
func cleanUpTokenization(s string) string {
	for _, r := range [][2]string{
		{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
		{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
	} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

// pyDecodeUTF8 decodes b as Python's bytes.decode("utf-8", "replace"):
// each maximal ill-formed subpart becomes one U+FFFD.
func pyDecodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || w > 1 {
			sb.WriteRune(r)
			i += w
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return sb.String()
}

// maximalSubpart is the length of the ill-formed sequence at the start of
// b: the lead byte plus the continuation bytes that were still acceptable.
func maximalSubpart(b []byte) int {
	lo, hi, need := byte(0x80), byte(0xBF), 0
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		lo, need = 0xA0, 2
	case c == 0xED:
		hi, need = 0x9F, 2
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		lo, need = 0x90, 3
	case c == 0xF4:
		hi, need = 0x8F, 3
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}
