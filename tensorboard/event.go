package tensorboard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// FileVersion is the file_version of an event file's first event: TensorBoard reads version 2 files.
const FileVersion = "brain.Event:2"

// Scalar is one tagged value of a summary (summary.proto's Summary.Value with its simple_value).
type Scalar struct {
	Tag   string
	Value float32
}

// Event is the part of a tensorflow.Event (event.proto) this package writes and reads: the first event of a
// file carries FileVersion, the others a step's scalars. Other kinds of event (graphs, images, session logs)
// and the summary values that are not simple values are skipped when read.
type Event struct {
	WallTime    float64 // seconds since the Unix epoch
	Step        int64
	FileVersion string
	Scalars     []Scalar
}

// Field numbers and wire types of the messages (event.proto, summary.proto; the protobuf encoding is
// https://protobuf.dev/programming-guides/encoding/).
const (
	eventWallTime    = 1 // double
	eventStep        = 2 // int64
	eventFileVersion = 3 // string
	eventSummary     = 5 // Summary
	summaryValue     = 1 // repeated Summary.Value
	valueTag         = 1 // string
	valueSimpleValue = 2 // float

	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func appendKey(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field<<3|wire))
}

func appendBytesField(b []byte, field int, v []byte) []byte {
	b = appendKey(b, field, wireBytes)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// marshal appends e's protobuf encoding to b. Zero fields are left out, as proto3 does.
func (e *Event) marshal(b []byte) []byte {
	if e.WallTime != 0 {
		b = appendKey(b, eventWallTime, wireFixed64)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.WallTime))
	}
	if e.Step != 0 {
		b = appendKey(b, eventStep, wireVarint)
		b = binary.AppendUvarint(b, uint64(e.Step)) // a negative int64 takes ten bytes, as protobuf's int64 does
	}
	if e.FileVersion != "" {
		b = appendBytesField(b, eventFileVersion, []byte(e.FileVersion))
	}
	if len(e.Scalars) > 0 {
		var summary, value []byte
		for _, s := range e.Scalars {
			value = appendBytesField(value[:0], valueTag, []byte(s.Tag))
			value = appendKey(value, valueSimpleValue, wireFixed32)
			value = binary.LittleEndian.AppendUint32(value, math.Float32bits(s.Value))
			summary = appendBytesField(summary, summaryValue, value)
		}
		b = appendBytesField(b, eventSummary, summary)
	}
	return b
}

// errProto is a malformed message.
var errProto = errors.New("malformed protobuf")

// field is one decoded field of a message: its number, wire type, and its value (v for varints and fixed
// widths, data for length-delimited ones).
type field struct {
	num  int
	wire int
	v    uint64
	data []byte
}

// fields calls f with each field of the message b, skipping nothing: the caller ignores the numbers it does
// not know, which is how protobuf treats unknown fields. Groups (wire types 3 and 4, deprecated) are
// refused.
func fields(b []byte, f func(field) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("%w: bad field key", errProto)
		}
		b = b[n:]
		fd := field{num: int(key >> 3), wire: int(key & 7)}
		if key>>3 == 0 || key>>3 > 1<<29-1 {
			return fmt.Errorf("%w: field number %d", errProto, key>>3)
		}
		switch fd.wire {
		case wireVarint:
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return fmt.Errorf("%w: bad varint in field %d", errProto, fd.num)
			}
			fd.v, b = v, b[n:]
		case wireFixed64:
			if len(b) < 8 {
				return fmt.Errorf("%w: field %d cut short", errProto, fd.num)
			}
			fd.v, b = binary.LittleEndian.Uint64(b), b[8:]
		case wireFixed32:
			if len(b) < 4 {
				return fmt.Errorf("%w: field %d cut short", errProto, fd.num)
			}
			fd.v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return fmt.Errorf("%w: field %d's length runs past the message", errProto, fd.num)
			}
			fd.data, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return fmt.Errorf("%w: field %d has wire type %d", errProto, fd.num, fd.wire)
		}
		if err := f(fd); err != nil {
			return err
		}
	}
	return nil
}

// unmarshal decodes an Event from b. A known field with another wire type than its own is skipped as an
// unknown one, as protobuf's parsers do; a repeated singular field keeps its last value, and the values of
// repeated summaries add up, as a protobuf merge does.
func (e *Event) unmarshal(b []byte) error {
	*e = Event{}
	return fields(b, func(f field) error {
		switch {
		case f.num == eventWallTime && f.wire == wireFixed64:
			e.WallTime = math.Float64frombits(f.v)
		case f.num == eventStep && f.wire == wireVarint:
			e.Step = int64(f.v)
		case f.num == eventFileVersion && f.wire == wireBytes:
			e.FileVersion = string(f.data)
		case f.num == eventSummary && f.wire == wireBytes:
			return fields(f.data, func(f field) error {
				if f.num != summaryValue || f.wire != wireBytes {
					return nil
				}
				var s Scalar
				simple := false
				err := fields(f.data, func(f field) error {
					switch {
					case f.num == valueTag && f.wire == wireBytes:
						s.Tag = string(f.data)
					case f.num == valueSimpleValue && f.wire == wireFixed32:
						s.Value, simple = math.Float32frombits(uint32(f.v)), true
					}
					return nil
				})
				if err == nil && simple {
					e.Scalars = append(e.Scalars, s)
				}
				return err
			})
		}
		return nil
	})
}
