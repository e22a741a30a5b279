package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxHeaderSize caps the JSON header length, so that a corrupt length prefix cannot make a reader allocate
// gigabytes and a crafted header cannot cost seconds: an entry takes about 100 bytes, so 16 MiB holds
// 160,000 tensors, far more than any model (the reference implementation allows 100 MB, which took 13 s and
// 1.1 GB to parse here).
const MaxHeaderSize = 16 << 20

// MaxRank caps a tensor's number of dimensions (torch allows 64).
const MaxRank = 64

const metadataKey = "__metadata__"

// TensorInfo is one header entry: where a tensor's bytes lie in the data
// section, [Begin, End).
type TensorInfo struct {
	Name       string
	DType      DType
	Shape      []int64
	Begin, End int64
}

// header is a parsed and validated header.
type header struct {
	meta  map[string]string
	infos []TensorInfo // sorted by name
	// metaLast records that __metadata__ followed every tensor entry, so that
	// re-encoding reproduces the file byte for byte.
	metaLast bool
}

// ParseHeader parses the JSON header hdr (without the 8-byte length prefix)
// of a file whose data section is dataLen bytes long, and checks that the
// entries tile the data section exactly. infos are sorted by name; meta is nil
// when the header has no __metadata__.
func ParseHeader(hdr []byte, dataLen int64) (meta map[string]string, infos []TensorInfo, err error) {
	h, err := parseHeader(hdr, dataLen)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	return h.meta, h.infos, nil
}

func parseHeader(hdr []byte, dataLen int64) (*header, error) {
	if dataLen < 0 {
		return nil, fmt.Errorf("%w: negative data section length %d", ErrTruncated, dataLen)
	}
	if !utf8.Valid(hdr) {
		return nil, fmt.Errorf("%w: header is not valid UTF-8 (first bad byte at %d)", ErrHeader, firstInvalidUTF8(hdr))
	}
	if err := checkEscapes(hdr); err != nil {
		return nil, err
	}
	p := headerParser{dec: json.NewDecoder(bytes.NewReader(hdr))}
	p.dec.UseNumber()
	h, err := p.object()
	if err != nil {
		return nil, err
	}
	if err := checkCoverage(h.infos, dataLen); err != nil {
		return nil, err
	}
	slices.SortFunc(h.infos, func(a, b TensorInfo) int { return strings.Compare(a.Name, b.Name) })
	return h, nil
}

// headerParser walks the header token by token rather than unmarshalling into
// a map, because a map would silently keep the last of two duplicate names.
type headerParser struct {
	dec *json.Decoder
}

func (p *headerParser) token(what string) (json.Token, error) {
	tok, err := p.dec.Token()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: JSON ends early, expecting %s", ErrHeader, what)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: bad JSON near byte %d: %v", ErrHeader, p.dec.InputOffset(), err)
	}
	return tok, nil
}

// delim reads one token and checks it is the delimiter d.
func (p *headerParser) delim(d json.Delim, what string) error {
	tok, err := p.token(what)
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("%w: %s is %s, not a JSON %s", ErrHeader, what, describe(tok), delimName(d))
	}
	return nil
}

// key reads an object key, or reports ok=false at the closing brace.
func (p *headerParser) key(where string) (key string, ok bool, err error) {
	tok, err := p.token("a key or '}' in " + where)
	if err != nil {
		return "", false, err
	}
	if tok == json.Delim('}') {
		return "", false, nil
	}
	s, isStr := tok.(string)
	if !isStr {
		return "", false, fmt.Errorf("%w: %s: expected a key, got %s", ErrHeader, where, describe(tok))
	}
	return s, true, nil
}

func (p *headerParser) object() (*header, error) {
	if err := p.delim('{', "the header"); err != nil {
		return nil, err
	}
	h := &header{}
	seen := map[string]bool{}
	metaAt := -1
	for {
		name, ok, err := p.key("the header")
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: %q appears twice in the header", ErrDuplicate, name)
		}
		seen[name] = true
		if name == metadataKey {
			if h.meta, err = p.metadata(); err != nil {
				return nil, err
			}
			metaAt = len(h.infos)
			continue
		}
		info, err := p.entry(name)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		h.infos = append(h.infos, info)
	}
	switch tok, err := p.dec.Token(); {
	case err == io.EOF:
	case err != nil:
		return nil, fmt.Errorf("%w: bad JSON after the header object near byte %d (only space padding may follow): %v",
			ErrHeader, p.dec.InputOffset(), err)
	default:
		return nil, fmt.Errorf("%w: unexpected %s after the header object near byte %d (only space padding may follow)",
			ErrHeader, describe(tok), p.dec.InputOffset())
	}
	h.metaLast = h.meta != nil && len(h.infos) > 0 && metaAt == len(h.infos)
	return h, nil
}

// metadata reads the __metadata__ value: an object of strings, or null.
func (p *headerParser) metadata() (map[string]string, error) {
	tok, err := p.token(metadataKey)
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, nil
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("%w: %s is %s, not a JSON object of strings", ErrHeader, metadataKey, describe(tok))
	}
	meta := map[string]string{}
	for {
		k, ok, err := p.key(metadataKey)
		if err != nil {
			return nil, err
		}
		if !ok {
			return meta, nil
		}
		if _, dup := meta[k]; dup {
			return nil, fmt.Errorf("%w: %s key %q appears twice", ErrDuplicate, metadataKey, k)
		}
		v, err := p.token(metadataKey + " value")
		if err != nil {
			return nil, err
		}
		s, isStr := v.(string)
		if !isStr {
			return nil, fmt.Errorf("%w: %s[%q] is %s, not a string", ErrHeader, metadataKey, k, describe(v))
		}
		meta[k] = s
	}
}

// entry reads one tensor's {"dtype","shape","data_offsets"} object and checks
// it on its own; checkCoverage checks the entries against each other.
func (p *headerParser) entry(name string) (TensorInfo, error) {
	info := TensorInfo{Name: name}
	if err := p.delim('{', "the entry"); err != nil {
		return info, err
	}
	var haveDType, haveShape, haveOffsets bool
	for {
		field, ok, err := p.key("the entry")
		if err != nil {
			return info, err
		}
		if !ok {
			break
		}
		switch field {
		case "dtype":
			if haveDType {
				return info, fmt.Errorf("%w: field dtype appears twice", ErrDuplicate)
			}
			haveDType = true
			tok, err := p.token("the dtype")
			if err != nil {
				return info, err
			}
			s, isStr := tok.(string)
			if !isStr {
				return info, fmt.Errorf("%w: dtype is %s, not a string", ErrHeader, describe(tok))
			}
			info.DType = DType(s)
			if _, err := info.DType.Size(); err != nil {
				return info, err
			}
		case "shape":
			if haveShape {
				return info, fmt.Errorf("%w: field shape appears twice", ErrDuplicate)
			}
			haveShape = true
			if info.Shape, err = p.ints("shape", ErrShape); err != nil {
				return info, err
			}
			if len(info.Shape) > MaxRank {
				return info, fmt.Errorf("%w: shape of rank %d, more than %d", ErrShape, len(info.Shape), MaxRank)
			}
		case "data_offsets":
			if haveOffsets {
				return info, fmt.Errorf("%w: field data_offsets appears twice", ErrDuplicate)
			}
			haveOffsets = true
			offs, err := p.ints("data_offsets", ErrOffsets)
			if err != nil {
				return info, err
			}
			if len(offs) != 2 {
				return info, fmt.Errorf("%w: data_offsets has %d numbers, want [begin,end]", ErrOffsets, len(offs))
			}
			info.Begin, info.End = offs[0], offs[1]
		default:
			return info, fmt.Errorf("%w: unknown field %q (want dtype, shape, data_offsets)", ErrHeader, field)
		}
	}
	switch {
	case !haveDType:
		return info, fmt.Errorf("%w: missing dtype", ErrHeader)
	case !haveShape:
		return info, fmt.Errorf("%w: missing shape", ErrHeader)
	case !haveOffsets:
		return info, fmt.Errorf("%w: missing data_offsets", ErrHeader)
	}
	if info.Begin > info.End {
		return info, fmt.Errorf("%w: data_offsets [%d,%d] has begin > end", ErrOffsets, info.Begin, info.End)
	}
	n, err := byteSize(info.DType, info.Shape)
	if err != nil {
		return info, err
	}
	if n != info.End-info.Begin {
		return info, fmt.Errorf("%w: shape %v of %s needs %d bytes but data_offsets [%d,%d] span %d",
			ErrShape, info.Shape, info.DType, n, info.Begin, info.End, info.End-info.Begin)
	}
	return info, nil
}

// ints reads a JSON array of non-negative integers; kind is the sentinel to
// wrap when a value is not one.
func (p *headerParser) ints(field string, kind error) ([]int64, error) {
	if err := p.delim('[', field); err != nil {
		return nil, err
	}
	out := []int64{}
	for i := 0; ; i++ {
		tok, err := p.token(field + " element or ']'")
		if err != nil {
			return nil, err
		}
		if tok == json.Delim(']') {
			return out, nil
		}
		num, isNum := tok.(json.Number)
		if !isNum {
			return nil, fmt.Errorf("%w: %s[%d] is %s, not an integer", kind, field, i, describe(tok))
		}
		v, err := parseNonNegInt(string(num))
		if err != nil {
			return nil, fmt.Errorf("%w: %s[%d] = %s: %v", kind, field, i, num, err)
		}
		out = append(out, v)
	}
}

// parseNonNegInt accepts only plain digits: "1.0", "1e3" and "-1" are not
// sizes even where JSON allows them.
func parseNonNegInt(s string) (int64, error) {
	if strings.HasPrefix(s, "-") {
		return 0, errors.New("negative")
	}
	var v int64
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, errors.New("not an integer")
		}
		if v > (1<<63-1-int64(c-'0'))/10 {
			return 0, errors.New("too large")
		}
		v = v*10 + int64(c-'0')
	}
	return v, nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// describe names a JSON token for error messages.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		return "'" + v.String() + "'"
	case string:
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + v.String()
	case bool:
		return fmt.Sprintf("%t", v)
	}
	return fmt.Sprintf("%v", tok)
}

func delimName(d json.Delim) string {
	if d == '[' {
		return "array"
	}
	return "object"
}

// checkEscapes refuses \u escapes that name half of a UTF-16 surrogate pair alone: encoding/json would turn
// them into U+FFFD silently, so that two different names in the file could become one.
func checkEscapes(hdr []byte) error {
	high := -1 // the offset of a high surrogate escape waiting for its low half
	for i := 0; i < len(hdr); i++ {
		if hdr[i] != '\\' || i+1 >= len(hdr) {
			if high >= 0 {
				return fmt.Errorf("%w: lone surrogate escape at byte %d", ErrHeader, high)
			}
			continue
		}
		if hdr[i+1] != 'u' || i+6 > len(hdr) {
			if high >= 0 {
				return fmt.Errorf("%w: lone surrogate escape at byte %d", ErrHeader, high)
			}
			i++ // a two-character escape, such as \\ or \"
			continue
		}
		v, err := strconv.ParseUint(string(hdr[i+2:i+6]), 16, 16)
		if err != nil {
			return fmt.Errorf("%w: invalid escape %q at byte %d", ErrHeader, hdr[i:i+6], i)
		}
		switch {
		case v >= 0xD800 && v < 0xDC00:
			if high >= 0 {
				return fmt.Errorf("%w: lone surrogate escape at byte %d", ErrHeader, high)
			}
			high = i
		case v >= 0xDC00 && v < 0xE000:
			if high < 0 || high != i-6 {
				return fmt.Errorf("%w: lone surrogate escape at byte %d", ErrHeader, i)
			}
			high = -1
		default:
			if high >= 0 {
				return fmt.Errorf("%w: lone surrogate escape at byte %d", ErrHeader, high)
			}
		}
		i += 5
	}
	if high >= 0 {
		return fmt.Errorf("%w: lone surrogate escape at byte %d", ErrHeader, high)
	}
	return nil
}
