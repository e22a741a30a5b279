package datasets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// The two files that hold JSON records: JSONL, a record a line, and a JSON array of records. Both hand each
// record to jsonRecords.record (or, in batches, to its decoders) in file order.

// readRecordLines reads a JSONL file of records, one a line of at most maxLineBytes; a byte-order mark
// before the first is passed over. A read error (a cut .gz) stops reading there. Once the file's layout
// is known, lines are decoded a batch at a time (lineBatch), in parallel, and handed on in order.
func readRecordLines(j *jsonRecords, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	var batch lineBatch
	for n := 1; ; n++ {
		line, long, err := boundedLine(br, &buf, maxLineBytes)
		readErr := err != nil && err != io.EOF
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\uFEFF"))
		}
		switch {
		case readErr:
		case long:
			batch.add(n, nil, fmt.Errorf("longer than %d MiB", maxLineBytes>>20))
		case len(bytes.TrimSpace(line)) == 0:
		case j.batched():
			batch.add(n, line, nil)
		default:
			if ferr := batch.flush(j); ferr != nil {
				return ferr
			}
			if rerr := j.record(line, n, lineName); rerr != nil {
				return rerr
			}
		}
		if batch.full() || err != nil {
			if ferr := batch.flush(j); ferr != nil {
				return ferr
			}
		}
		if readErr {
			return j.src.bad(lineName(n, ""), fmt.Errorf("unreadable, so is the rest of the file: %w", err))
		}
		if err == io.EOF {
			return nil
		}
	}
}

// batched reports whether records are decoded in batches: once the file's layout of dialogue records is
// known for sure.
func (j *jsonRecords) batched() bool {
	return j.shape != nil && !j.shape.unified && !j.shape.assumed
}

// lineBatch is JSON lines read and not yet decoded: up to 4,096 lines or 16 MiB (or one longer line),
// copied into one buffer that the next batch reuses.
type lineBatch struct {
	lines []batchLine
	buf   []byte
}

// batchLine is a line (n, from 1) of a batch, at buf[start:end], and what decoding it gave.
type batchLine struct {
	n          int
	start, end int
	err        error // the line's own problem (too long), or its record's
	d          Dialogue
	own        string
	dropped    Dropped
}

func (b *lineBatch) add(n int, raw []byte, err error) {
	start := len(b.buf)
	b.buf = append(b.buf, raw...)
	b.lines = append(b.lines, batchLine{n: n, start: start, end: len(b.buf), err: err})
}

func (b *lineBatch) full() bool { return len(b.lines) >= 4096 || len(b.buf) >= 16<<20 }

// flush decodes the batch's lines on up to GOMAXPROCS goroutines, each with its own chatTurns, and then
// hands the records on in line order as record does: a malformed one to src.bad, a good one to emit.
func (b *lineBatch) flush(j *jsonRecords) error {
	lines, buf := b.lines, b.buf
	b.lines, b.buf = b.lines[:0], b.buf[:0]
	if cap(buf) > 32<<20 {
		b.buf = nil // let a long line's buffer go
	}
	if len(lines) == 0 {
		return nil
	}
	workers := min(runtime.GOMAXPROCS(0), (len(lines)+63)/64)
	if !j.batched() {
		workers = 0 // lines too long to read, before the layout is known: nothing to decode
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec := j.newDecoder(j.shape)
			for i := w; i < len(lines); i += workers {
				l := &lines[i]
				if l.err == nil {
					l.d, l.own, l.err = j.dialogueRecord(dec, buf[l.start:l.end], l.n)
					l.dropped = dec.c.dropped
				}
			}
		}()
	}
	wg.Wait()
	for i := range lines {
		l := &lines[i]
		if l.err != nil {
			if err := j.src.bad(lineName(l.n, l.own), l.err); err != nil {
				return err
			}
			continue
		}
		j.src.dropped.add(l.dropped)
		if err := j.emit(lineName(l.n, l.own), l.d); err != nil {
			return err
		}
	}
	clear(lines) // the decoded dialogues go with the batch
	return nil
}

// errElementTooLong stops the reading of a JSON array at an element beyond maxLineBytes.
var errElementTooLong = errors.New("element too long")

// readRecordArray reads a JSON file holding one array of records (a ShareGPT dump), an element at a
// time through encoding/json's Decoder, never the whole file; each element is bounded by maxLineBytes. A
// byte-order mark before it is passed over. A syntax or read error leaves the rest unreadable: it is
// reported at the element where it happened and reading stops there.
func readRecordArray(j *jsonRecords, r io.Reader) error {
	br := bufio.NewReader(r)
	if bom, err := br.Peek(3); err == nil && string(bom) == "\uFEFF" {
		br.Discard(3)
	}
	// The decoder grows its buffer to what it is handed: 1 MiB a read keeps it within about twice the bound.
	bound := &boundedReader{r: br, limit: maxLineBytes, chunk: 1 << 20, tooLong: errElementTooLong}
	dec := json.NewDecoder(bound)
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: not JSON: %w", j.src.name, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%s: not a JSON array of dialogue records (it starts with %v)", j.src.name, tok)
	}
	i := 0
	for ; dec.More(); i++ {
		bound.mark = dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, errElementTooLong) {
				return j.src.bad(recordName(i, ""), fmt.Errorf("longer than %d MiB; the rest of the file is not read", maxLineBytes>>20))
			}
			return j.src.bad(recordName(i, ""), fmt.Errorf("unreadable, so is the rest of the file: %w", err))
		}
		if err := j.record(raw, i, recordName); err != nil {
			return err
		}
	}
	bound.mark = dec.InputOffset()
	tok, err = dec.Token()
	if err == nil && tok != json.Delim(']') {
		err = fmt.Errorf("unexpected %v", tok)
	}
	if err != nil {
		return j.src.bad(recordName(i, ""), fmt.Errorf("the array is cut short: %w", err))
	}
	// Reading on to the end also makes gzip check its checksum.
	if tok, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("data after the array (%v)", tok)
		}
		return j.src.bad("end of file", err)
	}
	return nil
}
