package datasets

import "bytes"

// recordScanner is the fast path of a chat record (a list of message objects): it checks one record's JSON
// as encoding/json would and finds the spans of the values the reader needs (the id, the domain, and each
// message's speaker, text, tool_calls and function_call), without reflection or copies. It gives up (ok
// false) at anything it does not know for sure: a syntax error, a list or message of another type, a key
// that encoding/json would match without regard to case, nesting beyond encoding/json's limit. The reader
// then decodes the record with encoding/json, which says what is wrong, or reads it. TestChatScanner and
// FuzzChatScanner hold the two paths to the same result.
type recordScanner struct {
	b     []byte
	i     int
	depth int
	f     recordFields
	rec   rawRecord
}

// rawRecord is a record's values as raw JSON, empty where the record lacks the field.
type rawRecord struct {
	id, dialogueID, domain []byte
	list                   listState
	msgs                   [][msgFields][]byte // speaker, text, tool_calls, function_call
}

type listState int

const (
	listMissing listState = iota
	listNull
	listPresent
)

// msgFields is the number of fields read of a message, in the order msgSpeaker, msgText, msgToolCalls,
// msgFunctionCall.
const msgFields = 4

// maxScanDepth is encoding/json's limit on nesting.
const maxScanDepth = 10000

// scan reads b as one record of fields f; ok reports whether s.rec holds it.
func (s *recordScanner) scan(b []byte, f recordFields) (ok bool) {
	s.b, s.i, s.depth, s.f = b, 0, 0, f
	s.rec.id, s.rec.dialogueID, s.rec.domain, s.rec.list = nil, nil, nil, listMissing
	s.rec.msgs = s.rec.msgs[:0]
	s.space()
	if !s.object(s.recordField) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

// recordField reads the value of a record's key.
func (s *recordScanner) recordField(key []byte) bool {
	f := s.f
	switch string(key) {
	case f.id:
		return s.spanInto(&s.rec.id)
	case f.list:
		return s.messages()
	case f.domain:
		return s.spanInto(&s.rec.domain)
	}
	if !f.idNamed && string(key) == "dialogue_id" {
		return s.spanInto(&s.rec.dialogueID)
	}
	if foldsTo(key, f.id, f.list, f.domain, "dialogue_id") {
		return false
	}
	return s.value()
}

// messages reads the list of messages: null, or an array of objects.
func (s *recordScanner) messages() bool {
	s.rec.msgs = s.rec.msgs[:0]
	if s.literal("null") {
		s.rec.list = listNull
		return true
	}
	s.rec.list = listPresent
	return s.seq('[', ']', func() bool {
		s.rec.msgs = append(s.rec.msgs, [msgFields][]byte{})
		return s.object(s.messageField)
	})
}

// messageField reads the value of a message's key.
func (s *recordScanner) messageField(key []byte) bool {
	m := &s.rec.msgs[len(s.rec.msgs)-1]
	for k, name := range [msgFields]string{s.f.speaker, s.f.text, "tool_calls", "function_call"} {
		if string(key) == name {
			return s.spanInto(&m[k])
		}
	}
	if foldsTo(key, s.f.speaker, s.f.text, "tool_calls", "function_call") {
		return false
	}
	return s.value()
}

// foldsTo reports whether key would be taken for one of names by encoding/json's matching without regard
// to case (a key that is not ASCII is taken to, to be safe).
func foldsTo(key []byte, names ...string) bool {
	for _, c := range key {
		if c >= 0x80 {
			return true
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// spanInto reads a value and sets *dst to its bytes.
func (s *recordScanner) spanInto(dst *[]byte) bool {
	start := s.i
	if !s.value() {
		return false
	}
	*dst = s.b[start:s.i]
	return true
}

// object reads an object, handing each key (unquoted; a key with an escape gives up) to field, which reads
// its value.
func (s *recordScanner) object(field func(key []byte) bool) bool {
	return s.seq('{', '}', func() bool {
		start := s.i
		escaped, ok := s.str()
		if !ok || escaped {
			return false
		}
		key := s.b[start+1 : s.i-1]
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		return field(key)
	})
}

// seq reads what open and end enclose, an object's members or an array's elements, each read by item and
// separated by commas; the nesting counts against maxScanDepth.
func (s *recordScanner) seq(open, end byte, item func() bool) bool {
	if s.i >= len(s.b) || s.b[s.i] != open {
		return false
	}
	s.i++
	if s.depth++; s.depth > maxScanDepth {
		return false
	}
	s.space()
	if s.i < len(s.b) && s.b[s.i] == end {
		s.i++
		s.depth--
		return true
	}
	for {
		if !item() {
			return false
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.space()
		case end:
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// value reads any JSON value.
func (s *recordScanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(func([]byte) bool { return s.value() })
	case c == '[':
		return s.seq('[', ']', s.value)
	case c == '"':
		_, ok := s.str()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

// str reads a string, as JSON allows it: no control character, escapes of \", \\, \/, \b, \f, \n, \r, \t
// and \u with four hex digits.
func (s *recordScanner) str() (escaped, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false, false
	}
	for s.i++; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return escaped, true
		case c < 0x20:
			return false, false
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return false, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if s.i+4 >= len(s.b) {
					return false, false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false, false
					}
				}
				s.i += 4
			default:
				return false, false
			}
		}
	}
	return false, false
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *recordScanner) number() bool {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case digits() == 0:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// literal reads word (true, false, null) if it is next.
func (s *recordScanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

// space passes over JSON's white space.
func (s *recordScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}
