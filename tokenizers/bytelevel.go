package tokenizers

import (
	"unicode"
	"unicode/utf8"
)

// byteRunes maps each byte to the printable character GPT-2's byte-level
// BPE uses for it (bytes_to_unicode): printable Latin-1 bytes stand for
// themselves, the others are shifted to U+0100 and up, in byte order.
// runeBytes is the inverse, used for decoding.
var (
	byteRunes [256]string
	runeBytes = map[rune]byte{}
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) {
			r = rune(256 + n)
			n++
		}
		byteRunes[b] = string(r)
		runeBytes[r] = byte(b)
	}
}

// appendByteLevel appends the byte-level form of s to dst.
func appendByteLevel(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		dst = append(dst, byteRunes[s[i]]...)
	}
	return dst
}

// gpt2Space is the \s of GPT-2's pattern (the regex module's White_Space),
// which is exactly Go's unicode.IsSpace.
func gpt2Space(r rune) bool { return unicode.IsSpace(r) }

func gpt2Other(r rune) bool {
	return !unicode.IsSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r)
}

// splitGPT2 cuts s the way GPT-2's pre-tokenization regex does:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// Go's regexp has no lookahead, and emulating it with \s+ merges runs of
// whitespace ("\n\n" must give "\n","\n" when a word follows). The
// alternation is therefore evaluated by hand, branch by branch, at each
// position. s must be valid UTF-8.
func splitGPT2(s string, emit func(piece string)) {
	for i := 0; i < len(s); {
		j := gpt2Match(s, i)
		emit(s[i:j])
		i = j
	}
}

// gpt2Match returns the end of the pattern's match starting at i.
func gpt2Match(s string, i int) int {
	if s[i] == '\'' {
		rest := s[i+1:]
		if len(rest) >= 1 {
			switch rest[0] {
			case 's', 't', 'm', 'd':
				return i + 2
			}
		}
		if len(rest) >= 2 {
			switch rest[:2] {
			case "re", "ve", "ll":
				return i + 3
			}
		}
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	start := i
	if r == ' ' && i+w < len(s) {
		// " ?X+" with the optional space taken: the class of the next rune decides.
		if nr, _ := utf8.DecodeRuneInString(s[i+w:]); !gpt2Space(nr) {
			r = nr
			start = i + w
		}
	}
	switch {
	case unicode.IsLetter(r):
		return runEnd(s, start, unicode.IsLetter)
	case unicode.IsNumber(r):
		return runEnd(s, start, unicode.IsNumber)
	case !gpt2Space(r):
		return runEnd(s, start, gpt2Other)
	}
	// Whitespace: \s+(?!\S) gives back the last space when a non-space
	// follows, so that it can lead the next word; a single space stays.
	j := runEnd(s, i, gpt2Space)
	if j == len(s) {
		return j
	}
	_, lw := utf8.DecodeLastRuneInString(s[:j])
	if j-lw > i {
		return j - lw
	}
	return j
}

// runEnd returns the end of the run of runes satisfying in, from i.
func runEnd(s string, i int, in func(rune) bool) int {
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !in(r) {
			break
		}
		i += w
	}
	return i
}
