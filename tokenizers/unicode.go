package tokenizers

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The predicates below reproduce the Python definitions HuggingFace's slow
// tokenizers rely on, which differ from Go's in small but visible ways.

// validUTF8 replaces every invalid byte by U+FFFD, as ranging over the
// string would, so that later stages see the same text.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// pyIsSpace is Python's str.isspace for one character: category Zs or
// bidirectional class WS, B or S. Unlike Go's unicode.IsSpace it includes
// U+001C..U+001F.
func pyIsSpace(r rune) bool {
	switch {
	case r >= '\t' && r <= '\r', r >= 0x1c && r <= 0x20, r == 0x85:
		return true
	case r < 0x80:
		return false
	case r == 0x2028, r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// bertIsWhitespace is BERT's _is_whitespace: space, tab, LF, CR or Zs.
func bertIsWhitespace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r':
		return true
	}
	return r >= 0x80 && unicode.Is(unicode.Zs, r)
}

// bertIsControl is BERT's _is_control: any category starting with C
// (unassigned code points included, which Go's unicode.C omits) except
// tab, LF and CR.
func bertIsControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	if r < 0x80 {
		return r < 0x20 || r == 0x7f
	}
	if unicode.In(r, unicode.C) {
		return true
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// bertIsPunct is BERT's _is_punctuation: all non-alphanumeric ASCII
// printables plus Unicode category P.
func bertIsPunct(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return r >= 0x80 && unicode.IsPunct(r)
}

// bertIsChinese is BERT's _is_chinese_char: the CJK ideograph blocks only.
func bertIsChinese(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}

// appendPyLower appends Python's str.lower() of r. Python applies the full
// (SpecialCasing) mapping, whose only unconditional multi-character
// lowercase is U+0130 → "i̇"; final sigma cannot arise because HF lowercases
// one character at a time.
func appendPyLower(b []byte, r rune) []byte {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return append(b, byte(r))
	}
	if r == 0x130 {
		return append(b, "i\u0307"...)
	}
	return utf8.AppendRune(b, unicode.ToLower(r))
}

// pyLower is Python's str.lower() for a whole string.
func pyLower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if 'A' <= c && c <= 'Z' {
			ascii = false
		}
	}
	if ascii {
		return s
	}
	b := make([]byte, 0, len(s)+4)
	for _, r := range s {
		b = appendPyLower(b, r)
	}
	return string(b)
}

// stripAccents is BERT's _run_strip_accents: canonical decomposition, then
// drop nonspacing marks (Mn). Decomposing first is what keeps "é" an "e".
func stripAccents(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// pyStrip helpers: Python's str.lstrip()/rstrip() with no argument.
func pyTrimLeft(s string) string  { return strings.TrimLeftFunc(s, pyIsSpace) }
func pyTrimRight(s string) string { return strings.TrimRightFunc(s, pyIsSpace) }
