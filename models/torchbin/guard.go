package torchbin

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// gotch's unpickler allocates every counted string, bytes object, long and
// frame at the length the pickle claims before reading it. A claim of a few
// hundred GiB is a fatal out-of-memory error that recover() cannot catch, so
// pickleLen walks the opcodes first (without building anything) and checks
// every such length against the bytes that are really there.
//
// It also bounds what the unpickler's work can cost, whatever the bytes say: gotch decodes long integers in
// time quadratic in their length, so longs are capped at a few bytes (PyTorch's weights-only unpickler takes
// LONG1 only; the legacy format's magic number is a 10-byte LONG1), and every opcode becomes a heap object,
// so their number is capped far above any state dict's (about 30 per tensor). A malformed INT or LONG line,
// which gotch would read as 0, is refused.

// The bounds of a pickle convrep unpickles.
const (
	maxOpcodes   = 1 << 20 // a state dict of 30,000 tensors needs about a million
	maxLongBytes = 16      // LONG1's length: the legacy magic number has 10
	maxIntLine   = 24      // an INT or LONG text line, digits and sign: int64 needs 20
)

// opcode argument layouts, as in CPython's pickletools.
const (
	argNone   = iota
	argFixed  // fixed-size argument of n bytes
	argLine   // one newline-terminated line
	argLines2 // two lines (module and name)
	argCount  // little-endian count of n bytes, then that many bytes
	argFrame  // 8-byte frame length; the frame's opcodes follow inline
)

type opArg struct {
	kind   int
	n      int
	signed bool // the count is a signed int32 (negative is an error)
}

var opArgs = map[byte]opArg{
	// no argument
	'N': {}, 0x88: {}, 0x89: {}, 't': {}, ')': {}, 0x85: {}, 0x86: {}, 0x87: {},
	']': {}, '}': {}, 0x8f: {}, 0x91: {}, 'l': {}, 'd': {}, 'o': {}, 0x81: {},
	0x92: {}, 0x93: {}, 'R': {}, '0': {}, '1': {}, '2': {}, 'Q': {}, 0x94: {},
	'a': {}, 'e': {}, 's': {}, 'u': {}, 0x90: {}, 'b': {}, '(': {}, '.': {},
	0x97: {}, 0x98: {},
	// fixed-size arguments
	0x80: {kind: argFixed, n: 1}, 'K': {kind: argFixed, n: 1}, 'h': {kind: argFixed, n: 1},
	'q': {kind: argFixed, n: 1}, 0x82: {kind: argFixed, n: 1},
	'M': {kind: argFixed, n: 2}, 0x83: {kind: argFixed, n: 2},
	'J': {kind: argFixed, n: 4}, 'j': {kind: argFixed, n: 4}, 'r': {kind: argFixed, n: 4},
	0x84: {kind: argFixed, n: 4}, 'G': {kind: argFixed, n: 8},
	// text lines
	'I': {kind: argLine}, 'L': {kind: argLine}, 'F': {kind: argLine}, 'S': {kind: argLine},
	'V': {kind: argLine}, 'g': {kind: argLine}, 'p': {kind: argLine}, 'P': {kind: argLine},
	'i': {kind: argLines2}, 'c': {kind: argLines2},
	// counted data
	'U': {kind: argCount, n: 1}, 'C': {kind: argCount, n: 1}, 0x8c: {kind: argCount, n: 1},
	0x8a: {kind: argCount, n: 1},
	'T':  {kind: argCount, n: 4, signed: true}, 0x8b: {kind: argCount, n: 4, signed: true},
	'B': {kind: argCount, n: 4}, 'X': {kind: argCount, n: 4},
	0x8d: {kind: argCount, n: 8}, 0x8e: {kind: argCount, n: 8}, 0x96: {kind: argCount, n: 8},
	0x95: {kind: argFrame, n: 8},
}

// pickleLen returns the length of the pickle at the start of r (up to and
// including its STOP opcode) after checking that no length in it exceeds
// what is left of limit bytes. It does not interpret the pickle otherwise.
func pickleLen(r io.Reader, limit int64) (int64, error) {
	s := &scanner{r: bufio.NewReaderSize(io.LimitReader(r, limit), 64<<10), limit: limit}
	for ops := 1; ; ops++ {
		at := s.pos
		op, err := s.byte()
		if err != nil {
			return 0, fmt.Errorf("pickle ends after %d bytes without a STOP opcode", at)
		}
		arg, ok := opArgs[op]
		if !ok {
			return 0, fmt.Errorf("unknown pickle opcode 0x%02x at byte %d", op, at)
		}
		if ops > maxOpcodes {
			return 0, fmt.Errorf("pickle holds more than %d opcodes (at byte %d), far more than a state dict", maxOpcodes, at)
		}
		if err := s.checkNumber(op); err != nil {
			return 0, fmt.Errorf("pickle opcode 0x%02x at byte %d: %w", op, at, err)
		}
		if err := s.skipArg(arg); err != nil {
			return 0, fmt.Errorf("pickle opcode 0x%02x at byte %d: %w", op, at, err)
		}
		if op == '.' {
			return s.pos, nil
		}
	}
}

type scanner struct {
	r     *bufio.Reader
	pos   int64
	limit int64
}

var errShort = errors.New("pickle truncated")

func (s *scanner) byte() (byte, error) {
	b, err := s.r.ReadByte()
	if err != nil {
		return 0, errShort
	}
	s.pos++
	return b, nil
}

func (s *scanner) skip(n int64) error {
	if n > s.limit-s.pos {
		return fmt.Errorf("%w: argument of %d bytes, only %d left", errShort, n, s.limit-s.pos)
	}
	k, err := s.r.Discard(int(n))
	s.pos += int64(k)
	if err != nil {
		return errShort
	}
	return nil
}

func (s *scanner) line() error {
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.pos += int64(len(chunk))
		switch err {
		case nil:
			return nil
		case bufio.ErrBufferFull:
			continue
		default:
			return fmt.Errorf("%w: line without a newline", errShort)
		}
	}
}

func (s *scanner) skipArg(a opArg) error {
	switch a.kind {
	case argFixed:
		return s.skip(int64(a.n))
	case argLine:
		return s.line()
	case argLines2:
		if err := s.line(); err != nil {
			return err
		}
		return s.line()
	case argCount, argFrame:
		var buf [8]byte
		for i := 0; i < a.n; i++ {
			b, err := s.byte()
			if err != nil {
				return err
			}
			buf[i] = b
		}
		n := binary.LittleEndian.Uint64(buf[:])
		if a.signed && int32(uint32(n)) < 0 {
			return fmt.Errorf("negative length %d", int32(uint32(n)))
		}
		if n > uint64(s.limit-s.pos) {
			return fmt.Errorf("%w: length %d, only %d bytes left", errShort, n, s.limit-s.pos)
		}
		if a.kind == argFrame {
			return nil // the frame's contents are opcodes; keep walking them
		}
		return s.skip(int64(n))
	}
	return nil
}

// checkNumber refuses the long integers gotch cannot decode in bounded time, and INT / LONG lines that are
// not numbers, before skipArg passes over them. r is positioned just after the opcode.
func (s *scanner) checkNumber(op byte) error {
	switch op {
	case 0x8b: // LONG4
		if b, err := s.r.Peek(4); err == nil && int32(binary.LittleEndian.Uint32(b)) < 0 {
			return fmt.Errorf("negative length %d", int32(binary.LittleEndian.Uint32(b)))
		}
		return errors.New("LONG4 integers are refused (a state dict holds none; PyTorch's weights-only unpickler refuses them too)")
	case 0x8a: // LONG1
		n, err := s.r.Peek(1)
		if err != nil {
			return errShort
		}
		if int(n[0]) > maxLongBytes {
			return fmt.Errorf("LONG1 integer of %d bytes; at most %d are accepted", n[0], maxLongBytes)
		}
	case 'I', 'L': // INT, LONG: a decimal line
		line, err := s.r.Peek(maxIntLine + 2) // fewer when the pickle ends sooner
		if err != nil && len(line) == 0 {
			return errShort
		}
		end := bytes.IndexByte(line, '\n')
		if end < 0 {
			return fmt.Errorf("integer line longer than %d bytes", maxIntLine)
		}
		text := strings.TrimSuffix(string(line[:end]), "L")
		if op == 'I' && (text == "00" || text == "01") { // protocol 0 booleans
			return nil
		}
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return fmt.Errorf("integer line %q is not a 64-bit integer", text)
		}
	}
	return nil
}
