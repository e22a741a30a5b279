package tensorboard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// Reader reads the events of an event file one at a time, checking both CRCs of each record. Its memory is
// one record's (at most MaxRecordLen, and no more than the rest of the file when its size is known).
type Reader struct {
	rec recordReader
}

// NewReader reads events from r; name is what errors call it, and size the stream's length in bytes, or
// -1 when unknown (a record's length is then only checked against MaxRecordLen).
func NewReader(r io.Reader, name string, size int64) *Reader {
	return &Reader{rec: recordReader{r: bufio.NewReader(r), name: name, size: size}}
}

// Next returns the next event; io.EOF after the last one, a *DamageError naming the record's byte offset
// when a record is torn, fails its CRC or does not decode.
func (r *Reader) Next() (Event, error) {
	off := r.rec.off
	data, err := r.rec.next()
	if err != nil {
		return Event{}, err
	}
	var e Event
	if err := e.unmarshal(data); err != nil {
		return Event{}, &DamageError{File: r.rec.name, Offset: off, Problem: err.Error()}
	}
	return e, nil
}

// Offset is the byte offset of the next record: after an error, that of the damaged one.
func (r *Reader) Offset() int64 { return r.rec.off }

// ReadFile reads every event of the file at path.
func ReadFile(path string) ([]Event, error) {
	var events []Event
	err := Each(path, func(e Event) error {
		events = append(events, e)
		return nil
	})
	return events, err
}

// Each calls f with each event of the file at path in turn, holding one record in memory; it stops at f's
// first error and returns it.
func Each(path string, f func(Event) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return err
	}
	r := NewReader(file, path, st.Size())
	for {
		off := r.Offset()
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f(e); err != nil {
			return fmt.Errorf("%s: event at byte %d: %w", path, off, err)
		}
	}
}
