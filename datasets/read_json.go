package datasets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// identified is a decoded record that can tell its dialogue id (or "" before it is known), so that an error
// names the record.
type identified[T any] interface {
	*T
	recordID() string
}

// readJSONArray decodes a file holding one JSON array of records, a record at a time (frames.json is 70 MB),
// and hands each to fn. A record of the wrong shape (a type error, or an error from fn) is a malformed
// record; a syntax or read error (a truncated .gz, a broken zip member) leaves the rest of the stream
// unreadable, so it is reported at the record where it happened and reading stops there.
func readJSONArray[T any, P identified[T]](src *source, r io.Reader, fn func(P) error) error {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: not JSON: %w", src.name, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%s: not a JSON array of records (starts with %v)", src.name, tok)
	}
	i := 0
	for ; dec.More(); i++ {
		var rec T
		p := P(&rec)
		if err := dec.Decode(p); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				return src.bad(recordName(i, ""), fmt.Errorf("unreadable, so is the rest of the file: %w", err))
			}
			// The decoder read the whole value before the type error: the stream is intact.
			if err := src.bad(recordName(i, p.recordID()), err); err != nil {
				return err
			}
			continue
		}
		if err := fn(p); err != nil {
			if err := src.bad(recordName(i, p.recordID()), err); err != nil {
				return err
			}
		}
	}
	tok, err = dec.Token()
	if err == nil && tok != json.Delim(']') {
		err = fmt.Errorf("unexpected %v", tok)
	}
	if err != nil {
		return src.bad(recordName(i, ""), fmt.Errorf("the array is cut short: %w", err))
	}
	// Reading on to the end also makes gzip and zip check their checksums.
	if tok, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("data after the array (%v)", tok)
		}
		return src.bad("end of file", err)
	}
	return nil
}

// readJSONLines decodes a file of one JSON record per line; blank lines are skipped. A line that is not
// JSON is a malformed record; a read error stops reading there.
func readJSONLines[T any, P identified[T]](src *source, r io.Reader, fn func(P) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return src.bad(lineName(n, ""), fmt.Errorf("unreadable, so is the rest of the file: %w", err))
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var rec T
			p := P(&rec)
			perr := json.Unmarshal(line, p)
			if perr == nil {
				perr = fn(p)
			}
			if perr != nil {
				if err := src.bad(lineName(n, p.recordID()), perr); err != nil {
					return err
				}
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// lineName names line n (1-based) with the dialogue id when known.
func lineName(n int, id string) string {
	if id == "" {
		return fmt.Sprintf("line %d", n)
	}
	return fmt.Sprintf("line %d (dialogue %s)", n, id)
}
