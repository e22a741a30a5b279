package datasets

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// readTurnTable reads a CSV (or, with tsv, tab-separated) table of turns: a header row naming the columns,
// then one row per turn, quoted as RFC 4180 says (a field holding the separator, a quote or a line break is
// quoted, a quote in it doubled: what Python's csv module and pandas write, with sep="\t" for TSV). The rows
// of a dialogue must be consecutive; within one they are put in turn order when there is a turn column.
// Places are line numbers, the header being line 1.
func readTurnTable(src *source, r io.Reader, tsv bool, cols Columns, sp speakerMap, merge bool,
	emit func(place string, d Dialogue) error) error {
	br, cr, idx, err := openTurnTable(src.name, r, tsv, cols)
	if err != nil {
		return err
	}
	g := &dialogueRows{src: src, corpus: src.corpus, merge: merge, hasTurn: idx[colTurn] >= 0, emit: emit}
	last := 1 // the line of the last row read whole
	for {
		br.mark = cr.InputOffset()
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		var pe *csv.ParseError
		switch {
		case err == nil:
		case errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) && rec != nil:
			// The row was read whole; its dialogue, when it can be told, is dropped with it.
			id := ""
			if i := idx[colDialogue]; i < len(rec) {
				id = strings.TrimSpace(rec[i])
			}
			if id == "" {
				g.spoil()
				if err := src.bad(fmt.Sprintf("line %d", pe.StartLine), fmt.Errorf("%d fields where the header has %d", len(rec), cr.FieldsPerRecord)); err != nil {
					return err
				}
				continue
			}
			if err := g.add(id, turnRow{place: fmt.Sprintf("line %d", pe.StartLine)}, fmt.Errorf("%d fields where the header has %d", len(rec), cr.FieldsPerRecord)); err != nil {
				return err
			}
			continue
		case errors.As(err, &pe):
			// A quoting error: the reader goes on at the next line. Which dialogue the row was of is not
			// known; the one before it is dropped, lest its turns be joined across the lost one.
			g.spoil()
			where := fmt.Sprintf("column %d", pe.Column)
			if pe.Line != pe.StartLine {
				where = fmt.Sprintf("line %d, column %d", pe.Line, pe.Column)
			}
			if err := src.bad(fmt.Sprintf("line %d", pe.StartLine), fmt.Errorf("%s: %w", where, pe.Err)); err != nil {
				return err
			}
			continue
		default:
			g.spoil()
			if errors.Is(err, errRowTooLong) {
				return src.bad(fmt.Sprintf("after line %d", last), fmt.Errorf("a row longer than %d MiB (an unclosed quote?); the rest of the file cannot be read", maxRowBytes>>20))
			}
			return src.bad(fmt.Sprintf("after line %d", last), fmt.Errorf("unreadable, so is the rest of the file: %w", err))
		}
		line, _ := cr.FieldPos(0)
		last = line
		place := fmt.Sprintf("line %d", line)
		field := func(role int) string {
			if i := idx[role]; i >= 0 {
				return rec[i]
			}
			return ""
		}
		id := strings.TrimSpace(field(colDialogue))
		if id == "" {
			g.spoil()
			if err := src.bad(place, fmt.Errorf("no dialogue id")); err != nil {
				return err
			}
			continue
		}
		row, rowErr := turnRowOf(place, field, idx[colTurn] >= 0, sp)
		if err := g.add(id, row, rowErr); err != nil {
			return err
		}
	}
	return g.flush()
}

// openTurnTable reads a table's header row and finds the columns of cols in it; the reader goes on with the
// rows.
func openTurnTable(name string, r io.Reader, tsv bool, cols Columns) (*boundedReader, *csv.Reader, [numColumns]int, error) {
	br := newRowBound(r)
	cr := csv.NewReader(br)
	if tsv {
		cr.Comma = '\t'
	}
	cr.ReuseRecord = true
	var idx [numColumns]int
	names, err := readHeader(name, cr)
	if err != nil {
		return nil, nil, idx, err
	}
	if idx, err = findColumns(cols.specs(), names); err != nil {
		return nil, nil, idx, fmt.Errorf("%s: header row: %w", name, err)
	}
	return br, cr, idx, nil
}

// readHeader reads a table's header row: the column names, trimmed.
func readHeader(name string, cr *csv.Reader) ([]string, error) {
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty: want a header row naming the columns", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: header row: %w", name, err)
	}
	names := make([]string, len(header))
	for i, h := range header {
		if i == 0 {
			h = strings.TrimPrefix(h, "\uFEFF") // the byte-order mark spreadsheet programs write
		}
		names[i] = strings.TrimSpace(h)
	}
	return names, nil
}

// turnRowOf makes a row of the fields of one turn; field gives a role's value as text. A row of a dropped
// speaker (Speakers.Drop) has dropped set and its label, and no text.
func turnRowOf(place string, field func(role int) string, hasTurn bool, sp speakerMap) (turnRow, error) {
	r := turnRow{place: place}
	var err error
	if hasTurn {
		if r.turn, err = parseTurn(field(colTurn)); err != nil {
			return r, err
		}
	}
	label := field(colSpeaker)
	side, drop, ok := sp.of(label)
	if !ok {
		return r, sp.unknown("speaker", label)
	}
	if drop {
		r.dropped, r.label = true, strings.ToLower(strings.TrimSpace(label))
		return r, nil
	}
	r.speaker = side
	// Copies, so that a kept turn does not hold on to the buffer of its whole row.
	r.text = strings.Clone(field(colText))
	r.domain = strings.Clone(strings.TrimSpace(field(colDomain)))
	return r, nil
}

// errRowTooLong stops a CSV reader inside a row beyond maxRowBytes.
var errRowTooLong = errors.New("row too long")

// boundedReader fails a read, with tooLong, that would take its reader more than limit bytes past mark, the
// offset where the record being read starts (a CSV row, a JSON array's element), so that one unclosed quote
// or one huge element does not gather the rest of the file into memory. chunk, when not 0, caps the bytes
// one Read hands on, which bounds a reader that grows its buffer to what it is handed.
type boundedReader struct {
	r       io.Reader
	limit   int64
	chunk   int
	tooLong error
	n       int64 // bytes read so far
	mark    int64
}

// rowSlack is what a CSV reader may read ahead of its row: its buffer.
const rowSlack = 64 << 10

// newRowBound bounds a CSV/TSV reader's rows by maxRowBytes.
func newRowBound(r io.Reader) *boundedReader {
	return &boundedReader{r: r, limit: maxRowBytes + rowSlack, tooLong: errRowTooLong}
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.n-b.mark > b.limit {
		return 0, b.tooLong
	}
	if b.chunk > 0 && len(p) > b.chunk {
		p = p[:b.chunk]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}
