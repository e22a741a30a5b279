package sets

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParsePyLiteral parses the subset of Python literal syntax that AmazonQA's files use (one repr'd dict per
// line): single- or double-quoted strings with Python's escapes, integers and floats with an optional minus,
// lists, dicts with string keys, True, False and None. It is strict: anything else (tuples, sets, prefixes such
// as u” or b”, triple quotes, unknown escapes, trailing text) is an error naming the byte column.
//
// Values map to Go as: str → string, int → int64, float → float64, True/False → bool, None → nil,
// list → []any, dict → map[string]any (a repeated key keeps its last value, as Python does).
func ParsePyLiteral(s string) (any, error) {
	p := &pyParser{s: s}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, p.errf("unexpected %q after the value", p.s[p.i])
	}
	return v, nil
}

// maxPyDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxPyDepth = 512

type pyParser struct {
	s string
	i int
}

func (p *pyParser) errf(format string, args ...any) error {
	return fmt.Errorf("column %d: %s", p.i+1, fmt.Sprintf(format, args...))
}

func (p *pyParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *pyParser) value(depth int) (any, error) {
	if depth > maxPyDepth {
		return nil, p.errf("nested deeper than %d", maxPyDepth)
	}
	if p.i >= len(p.s) {
		return nil, p.errf("unexpected end of input")
	}
	switch c := p.s[p.i]; {
	case c == '\'' || c == '"':
		return p.str()
	case c == '[':
		return p.list(depth)
	case c == '{':
		return p.dict(depth)
	case c == '-' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		for _, kw := range []struct {
			word string
			v    any
		}{{"True", true}, {"False", false}, {"None", nil}} {
			if strings.HasPrefix(p.s[p.i:], kw.word) && !identByte(p.s, p.i+len(kw.word)) {
				p.i += len(kw.word)
				return kw.v, nil
			}
		}
		return nil, p.errf("unexpected %q", c)
	}
}

// identByte reports whether s[i] continues an identifier (so "Nonesuch" is not None).
func identByte(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func (p *pyParser) list(depth int) (any, error) {
	p.i++ // [
	out := []any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return out, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if err := p.sep(']'); err != nil {
			return nil, err
		}
	}
}

// sep consumes the comma after an item, or leaves the closing bracket for the caller's loop to take.
func (p *pyParser) sep(closer byte) error {
	p.space()
	if p.i >= len(p.s) {
		return p.errf("unexpected end of input, want ',' or %q", closer)
	}
	switch p.s[p.i] {
	case ',':
		p.i++
		return nil
	case closer:
		return nil
	default:
		return p.errf("unexpected %q, want ',' or %q", p.s[p.i], closer)
	}
}

func (p *pyParser) dict(depth int) (any, error) {
	p.i++ // {
	out := map[string]any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return out, nil
		}
		if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
			return nil, p.errf("dict key must be a string")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.errf("want ':' after dict key %q", k)
		}
		p.i++
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[k.(string)] = v
		if err := p.sep('}'); err != nil {
			return nil, err
		}
	}
}

func (p *pyParser) number() (any, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	intStart := p.i
	nInt := digits()
	isFloat := false
	nFrac := 0
	if p.i < len(p.s) && p.s[p.i] == '.' {
		isFloat = true
		p.i++
		nFrac = digits()
	}
	if nInt+nFrac == 0 {
		p.i = start
		return nil, p.errf("malformed number")
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		isFloat = true
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.errf("malformed exponent")
		}
	}
	if identByte(p.s, p.i) {
		return nil, p.errf("malformed number")
	}
	text := p.s[start:p.i]
	if !isFloat {
		// Python rejects leading zeros in a non-zero integer ("012").
		if nInt > 1 && p.s[intStart] == '0' && strings.Trim(p.s[intStart:p.i], "0") != "" {
			return nil, p.errf("integer %s has a leading zero", text)
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, p.errf("integer %s: out of the int64 range", text)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, p.errf("float %s: out of range", text)
	}
	return f, nil
}

func (p *pyParser) str() (any, error) {
	quote := p.s[p.i]
	if strings.HasPrefix(p.s[p.i:], strings.Repeat(string(quote), 3)) {
		return nil, p.errf("triple-quoted strings are not supported")
	}
	p.i++
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			return nil, p.errf("unterminated string")
		}
		c := p.s[p.i]
		switch {
		case c == quote:
			p.i++
			return b.String(), nil
		case c == '\n' || c == '\r':
			return nil, p.errf("newline inside a string")
		case c == '\\':
			if err := p.escape(&b); err != nil {
				return nil, err
			}
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			p.i++
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, p.errf("invalid UTF-8 in a string")
			}
			b.WriteString(p.s[p.i : p.i+size])
			p.i += size
		}
	}
}

var simpleEscapes = map[byte]byte{
	'\\': '\\', '\'': '\'', '"': '"', 'n': '\n', 'r': '\r', 't': '\t',
	'a': '\a', 'b': '\b', 'f': '\f', 'v': '\v',
}

// escape decodes one backslash escape at p.i into b.
func (p *pyParser) escape(b *strings.Builder) error {
	if p.i+1 >= len(p.s) {
		return p.errf("unterminated escape")
	}
	c := p.s[p.i+1]
	if r, ok := simpleEscapes[c]; ok {
		b.WriteByte(r)
		p.i += 2
		return nil
	}
	switch {
	case c == '\n': // line continuation inside a string
		p.i += 2
		return nil
	case c >= '0' && c <= '7':
		j := p.i + 1
		v := 0
		for j < len(p.s) && j < p.i+4 && p.s[j] >= '0' && p.s[j] <= '7' {
			v = v*8 + int(p.s[j]-'0')
			j++
		}
		b.WriteRune(rune(v))
		p.i = j
		return nil
	case c == 'x' || c == 'u' || c == 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if p.i+2+n > len(p.s) {
			return p.errf("truncated \\%c escape", c)
		}
		v, err := strconv.ParseUint(p.s[p.i+2:p.i+2+n], 16, 32)
		if err != nil || strings.ContainsAny(p.s[p.i+2:p.i+2+n], "+-_") {
			return p.errf("malformed \\%c escape", c)
		}
		r := rune(v)
		if r > utf8.MaxRune || (r >= 0xD800 && r <= 0xDFFF) {
			return p.errf("\\%c escape %s is not a Unicode scalar value", c, p.s[p.i+2:p.i+2+n])
		}
		b.WriteRune(r)
		p.i += 2 + n
		return nil
	default:
		return p.errf("unknown escape \\%c", c)
	}
}
