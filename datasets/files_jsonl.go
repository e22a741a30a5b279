package datasets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// readDialogueLines streams a file of the unified format (WriteJSONL), one dialogue a line, each line at most
// maxLineBytes. A dialogue keeps its id, corpus and domain; its turns are cleaned, and merged with merge, as
// a corpus reader's are. A line that is not a dialogue is a malformed record; a read error (a cut .gz) stops
// reading there.
func readDialogueLines(src *source, r io.Reader, merge bool, emit func(place string, d Dialogue) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for n := 1; ; n++ {
		line, long, err := boundedLine(br, &buf, maxLineBytes)
		if err != nil && err != io.EOF {
			return src.bad(lineName(n, ""), fmt.Errorf("unreadable, so is the rest of the file: %w", err))
		}
		switch {
		case long:
			if berr := src.bad(lineName(n, ""), fmt.Errorf("longer than %d MiB", maxLineBytes>>20)); berr != nil {
				return berr
			}
		case len(bytes.TrimSpace(line)) > 0:
			var d Dialogue
			perr := json.Unmarshal(line, &d)
			if perr == nil {
				perr = checkDialogue(d)
			}
			if perr != nil {
				if berr := src.bad(lineName(n, d.ID), perr); berr != nil {
					return berr
				}
				break
			}
			turns := d.Turns
			d.Turns = nil
			for _, t := range turns {
				d.Turns = addTurn(d.Turns, t.Speaker, t.Text, merge)
			}
			if eerr := emit(lineName(n, d.ID), d); eerr != nil {
				return eerr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// boundedLine reads one line (its newline included) into *buf, which it reuses. A line longer than limit is
// read to its end and dropped: long reports it, and the line returned is empty. err is io.EOF at the end of
// the input.
func boundedLine(br *bufio.Reader, buf *[]byte, limit int) (line []byte, long bool, err error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(*buf)+len(chunk) > limit {
				long, *buf = true, (*buf)[:0]
			} else {
				*buf = append(*buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if cap(*buf) > 1<<24 && long {
			*buf = nil
		}
		return *buf, long, err
	}
}
