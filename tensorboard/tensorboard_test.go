package tensorboard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The CRC-32C test vectors of RFC 3720 §B.4 (iSCSI), and the check value of "123456789" that every CRC
// catalogue lists for CRC-32C.
func TestCRC32CPublishedVectors(t *testing.T) {
	seq := func(f func(i int) byte) []byte {
		b := make([]byte, 32)
		for i := range b {
			b[i] = f(i)
		}
		return b
	}
	cases := []struct {
		name string
		data []byte
		want uint32
	}{
		{"32 zero bytes", make([]byte, 32), 0x8A9136AA},
		{"32 0xFF bytes", bytes.Repeat([]byte{0xFF}, 32), 0x62A8AB43},
		{"0..31 ascending", seq(func(i int) byte { return byte(i) }), 0x46DD794E},
		{"31..0 descending", seq(func(i int) byte { return byte(31 - i) }), 0x113FDB5C},
		{"123456789", []byte("123456789"), 0xE3069283},
	}
	for _, c := range cases {
		if got := crc32.Checksum(c.data, castagnoli); got != c.want {
			t.Errorf("%s: CRC-32C %#08x, want %#08x", c.name, got, c.want)
		}
	}
}

// TensorFlow's mask rotates right by 15 and adds 0xa282ead8: for 0xE3069283, (0xE3069283 >> 15) is 0x0001C60D,
// its low 15 bits 0x1283 shifted left by 17 are 0x25060000, their OR 0x2507C60D, plus the delta 0xC78AB0E5.
func TestMaskedCRC(t *testing.T) {
	if got := maskedCRC([]byte("123456789")); got != 0xC78AB0E5 {
		t.Errorf("masked CRC of 123456789 = %#08x, want 0xC78AB0E5", got)
	}
	for _, crc := range []uint32{0, 1, 0xE3069283, 0xFFFFFFFF, 0x80000000} {
		if m := mask(crc); unmask(m) != crc || m == crc || mask(m) == crc {
			t.Errorf("mask(%#08x) = %#08x, unmask back %#08x", crc, m, unmask(m))
		}
	}
}

// One event encoded by hand from event.proto and summary.proto: wall_time 1.5, step 3, one value "a" = 2.
func TestEventEncodingMatchesTheProto(t *testing.T) {
	want := []byte{
		0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F, // field 1, fixed64: 1.5
		0x10, 0x03, // field 2, varint: 3
		0x2A, 0x0A, // field 5, 10 bytes: the Summary
		0x0A, 0x08, // Summary field 1, 8 bytes: a Value
		0x0A, 0x01, 'a', // Value field 1: tag "a"
		0x15, 0, 0, 0, 0x40, // Value field 2, fixed32: 2.0
	}
	e := Event{WallTime: 1.5, Step: 3, Scalars: []Scalar{{"a", 2}}}
	if got := e.marshal(nil); !bytes.Equal(got, want) {
		t.Errorf("encoded % x\nwant    % x", got, want)
	}
	var back Event
	if err := back.unmarshal(want); err != nil || !reflect.DeepEqual(back, e) {
		t.Errorf("decoded %+v, %v", back, err)
	}
	// The first record of a file: "brain.Event:2" in field 3.
	fv := (&Event{FileVersion: FileVersion}).marshal(nil)
	if want := append([]byte{0x1A, 13}, FileVersion...); !bytes.Equal(fv, want) {
		t.Errorf("file_version event % x, want % x", fv, want)
	}
}

// A TFRecord of "123456789": length 9 and its masked CRC, the data, the data's masked CRC.
func TestRecordFraming(t *testing.T) {
	rec := appendRecord(nil, []byte("123456789"))
	if len(rec) != 8+4+9+4 {
		t.Fatalf("record of %d bytes", len(rec))
	}
	if n := binary.LittleEndian.Uint64(rec); n != 9 {
		t.Errorf("length %d", n)
	}
	if c := binary.LittleEndian.Uint32(rec[8:]); c != maskedCRC(rec[:8]) {
		t.Errorf("length CRC %#08x", c)
	}
	if c := binary.LittleEndian.Uint32(rec[21:]); c != 0xC78AB0E5 {
		t.Errorf("data CRC %#08x, want 0xC78AB0E5", c)
	}
}

// Fields a newer writer (or TensorFlow itself) puts in an event are skipped: every wire type, in the Event,
// the Summary and the Value, and known fields with a foreign wire type.
func TestUnknownFieldsAreSkipped(t *testing.T) {
	var value []byte
	value = appendKey(value, 7, wireBytes) // node_name
	value = append(value, 2, 'n', 'n')
	value = appendBytesField(value, valueTag, []byte("loss"))
	value = appendKey(value, 9, wireBytes) // metadata
	value = append(value, 0)
	value = appendKey(value, valueSimpleValue, wireFixed32)
	value = binary.LittleEndian.AppendUint32(value, math.Float32bits(0.25))
	var summary []byte
	summary = appendBytesField(summary, summaryValue, value)
	// A value without a simple value (an image, a histogram) is left out.
	summary = appendBytesField(summary, summaryValue, appendBytesField(nil, valueTag, []byte("image")))
	var b []byte
	b = appendKey(b, 6, wireBytes) // log_message
	b = append(b, 3, 1, 2, 3)
	b = appendKey(b, 4, wireVarint) // graph_def with a foreign wire type
	b = binary.AppendUvarint(b, 1<<40)
	b = appendKey(b, 11, wireFixed64)
	b = append(b, make([]byte, 8)...)
	b = appendKey(b, 12, wireFixed32)
	b = append(b, make([]byte, 4)...)
	b = appendKey(b, eventStep, wireFixed32) // a known number with a foreign wire type
	b = append(b, 1, 2, 3, 4)
	b = appendKey(b, eventStep, wireVarint)
	b = binary.AppendUvarint(b, 42)
	b = appendBytesField(b, eventSummary, summary)
	var e Event
	if err := e.unmarshal(b); err != nil {
		t.Fatal(err)
	}
	want := Event{Step: 42, Scalars: []Scalar{{"loss", 0.25}}}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("decoded %+v, want %+v", e, want)
	}
}

func TestMalformedMessages(t *testing.T) {
	for _, b := range [][]byte{
		{0x10},                         // a varint missing
		{0x09, 1, 2},                   // a double cut short
		{0x2A, 5, 1},                   // a length past the end
		{0x0B},                         // a group
		{0x00, 1},                      // field number 0
		bytes.Repeat([]byte{0x80}, 11), // a key longer than a varint may be
	} {
		var e Event
		if err := e.unmarshal(b); !errors.Is(err, errProto) {
			t.Errorf("% x: %v, want a malformed protobuf", b, err)
		}
	}
}

// Events written and read back: every field, negative and extreme steps, special floats, tags of any bytes.
func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		events []Event
	}{
		{"none", nil},
		{"one scalar", []Event{{WallTime: 1700000000.25, Step: 10, Scalars: []Scalar{{"train/loss", 2.5}}}}},
		{"many steps", func() []Event {
			var es []Event
			for s := int64(1); s <= 300; s++ {
				es = append(es, Event{WallTime: float64(s), Step: s * 7, Scalars: []Scalar{{"a", float32(s)}, {"b", -float32(s) / 3}}})
			}
			return es
		}()},
		{"extremes", []Event{
			{Step: -1, Scalars: []Scalar{{"neg", -0.5}}},
			{Step: math.MaxInt64, Scalars: []Scalar{{"max", math.MaxFloat32}}},
			{Step: math.MinInt64, Scalars: []Scalar{{"inf", float32(math.Inf(1))}, {"tiny", math.SmallestNonzeroFloat32}}},
			{Step: 5, Scalars: []Scalar{{"zero", 0}, {"", 1}, {"objective/ünïcode\x00", 3}}},
			{WallTime: 12345.5, Step: 6},
		}},
		{"long tag", []Event{{Step: 1, Scalars: []Scalar{{strings.Repeat("x", 100000), 1}}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName(time.Unix(1700000000, 0)))
			w, err := Create(path, time.Unix(1700000000, 500e6))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range c.events {
				if err := w.Add(e.Step, time.Unix(0, int64(e.WallTime*1e9)), e.Scalars); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.events)+1 || !reflect.DeepEqual(got[0], Event{WallTime: 1700000000.5, FileVersion: FileVersion}) {
				t.Fatalf("%d events, the first %+v", len(got), got[0])
			}
			for i, e := range c.events {
				g := got[i+1]
				if g.Step != e.Step || math.Abs(g.WallTime-e.WallTime) > 1e-6*math.Abs(e.WallTime) || !reflect.DeepEqual(g.Scalars, e.Scalars) {
					t.Errorf("event %d: %+v, want %+v", i, g, e)
				}
			}
		})
	}
}
