package datasets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// maxParquetChunk bounds the declared uncompressed size of one column chunk read (HuggingFace datasets
// writes row groups of at most a few hundred MB); a larger one is refused before it is read.
const maxParquetChunk = 1 << 30

// readParquet reads a Parquet file of dialogue records (parquetRecordsOf, read by readParquetRecords with
// chat's speakers) or of turns, one row per turn, as HuggingFace datasets' to_parquet writes it: the
// columns (Columns) must be flat, one value a row; strings, or integers (a ClassLabel speaker column holds
// its class ids: map "0" and "1" in Speakers). Only the columns named are read, a row group at a time, a
// page at a time. The rows of a dialogue must be consecutive, across row groups too. Places are row
// indices, counted from 0 over the file as pandas counts them.
func readParquet(src *source, path string, cols Columns, rows, chat speakerMap, merge bool,
	emit func(place string, d Dialogue) error) (err error) {
	// The library is trusted with well-formed files; a broken one must not take the process with it.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: not a readable Parquet file: %v", path, p)
		}
	}()
	f, pf, recs, leaf, err := openParquet(path, cols)
	if err != nil {
		return err
	}
	defer f.Close()
	if recs != nil {
		return readParquetRecords(src, path, pf, recs, cols, chat, merge, emit)
	}
	src.shape = "rows, one per turn"
	specs := cols.specs()
	g := &dialogueRows{src: src, corpus: src.corpus, merge: merge, hasTurn: leaf[colTurn] >= 0, emit: emit}
	md := pf.Metadata()
	var row int64
	for gi, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		var readers [numColumns]*columnValues
		for role, ci := range leaf {
			if ci < 0 {
				continue
			}
			if ci >= len(chunks) {
				return fmt.Errorf("%s: row group %d has %d columns, not %d", path, gi, len(chunks), ci+1)
			}
			if gi < len(md.RowGroups) && ci < len(md.RowGroups[gi].Columns) {
				if n := md.RowGroups[gi].Columns[ci].MetaData.TotalUncompressedSize; n < 0 || n > maxParquetChunk {
					return fmt.Errorf("%s: row group %d: column %q declares %d bytes, more than the %d MiB a column chunk may hold here",
						path, gi, specs[role].name, n, maxParquetChunk>>20)
				}
			}
			readers[role] = &columnValues{pages: chunks[ci].Pages(), buf: make([]parquet.Value, 256)}
		}
		err := readParquetRows(src, readers, specs, rows, g, &row)
		for _, r := range readers {
			r.close()
		}
		if err != nil {
			if errors.Is(err, errStopFile) {
				return nil
			}
			return err
		}
	}
	return g.flush()
}

// openParquet opens a Parquet file and finds how to read it: as dialogue records (recs), or else as turns,
// with the leaf column of each role of cols (-1 for an optional one that is absent). The caller closes the
// file, and recovers from the library's panics.
func openParquet(path string, cols Columns) (*os.File, *parquet.File, *parquetRecords, [numColumns]int, error) {
	var leaf [numColumns]int
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, leaf, err
	}
	fail := func(err error) (*os.File, *parquet.File, *parquetRecords, [numColumns]int, error) {
		f.Close()
		return nil, nil, nil, leaf, err
	}
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := checkParquetFrame(f, st.Size()); err != nil {
		return fail(fmt.Errorf("%s: %w", path, err))
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fail(fmt.Errorf("%s: not a readable Parquet file: %w", path, err))
	}
	schema := pf.Schema()
	recs, err := parquetRecordsOf(path, schema, cols)
	if err != nil {
		return fail(err)
	}
	if recs != nil {
		return f, pf, recs, leaf, nil
	}
	var top []string
	for _, c := range schema.Fields() {
		top = append(top, c.Name())
	}
	for role, s := range cols.specs() {
		leaf[role] = -1
		lc, ok := schema.Lookup(s.name)
		switch {
		case !ok && !slices.Contains(top, s.name) && s.optional:
			continue
		case !ok && !slices.Contains(top, s.name):
			return fail(fmt.Errorf("%s: %w", path, missingColumn(role, s.name, top)))
		case !ok || lc.MaxRepetitionLevel > 0 || lc.Node == nil || !lc.Node.Leaf():
			return fail(fmt.Errorf("%s: column %q holds lists or records, not one value a row: give one row per turn, or name a dialogue's list of messages in data.columns.messages", path, s.name))
		}
		leaf[role] = lc.ColumnIndex
	}
	return f, pf, nil, leaf, nil
}

// checkParquetColumns opens a Parquet file and finds its columns, reading no row.
func checkParquetColumns(path string, cols Columns) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: not a readable Parquet file: %v", path, p)
		}
	}()
	f, _, _, _, err := openParquet(path, cols)
	if err == nil {
		f.Close()
	}
	return err
}

// errStopFile ends the reading of a file whose rest was skipped (SkipBad after an unreadable page).
var errStopFile = errors.New("stop reading the file")

// readParquetRows reads one row group's rows through its column readers, in step; *row counts rows over the
// file.
func readParquetRows(src *source, readers [numColumns]*columnValues, specs [numColumns]columnSpec, sp speakerMap,
	g *dialogueRows, row *int64) error {
	var vals [numColumns]parquet.Value
	for ; ; *row++ {
		place := fmt.Sprintf("row index %d", *row)
		ended := 0
		for role, r := range readers {
			if r == nil {
				continue
			}
			v, err := r.next()
			switch {
			case err == io.EOF:
				ended++
			case err != nil:
				g.spoil()
				if err := src.bad(place, fmt.Errorf("column %q unreadable, so is the rest of the file: %w", specs[role].name, err)); err != nil {
					return err
				}
				return errStopFile
			}
			vals[role] = v
		}
		if ended > 0 {
			if ended != len(nonNil(readers)) {
				g.spoil()
				if err := src.bad(place, fmt.Errorf("the columns of a row group hold different numbers of values")); err != nil {
					return err
				}
				return errStopFile
			}
			return nil
		}
		text := func(role int) (string, error) {
			if readers[role] == nil {
				return "", nil
			}
			return valueText(vals[role], specs[role].name)
		}
		id, err := text(colDialogue)
		id = strings.TrimSpace(id)
		if err == nil && id == "" {
			err = fmt.Errorf("no dialogue id")
		}
		if err != nil {
			g.spoil()
			if err := src.bad(place, err); err != nil {
				return err
			}
			continue
		}
		var fieldErr error
		field := func(role int) string {
			s, err := text(role)
			if err != nil && fieldErr == nil {
				fieldErr = err
			}
			return s
		}
		r, rowErr := turnRowOf(place, field, readers[colTurn] != nil, sp)
		if fieldErr != nil {
			rowErr = fieldErr
		}
		if err := g.add(id, r, rowErr); err != nil {
			return err
		}
	}
}

func nonNil(rs [numColumns]*columnValues) []*columnValues {
	var out []*columnValues
	for _, r := range rs {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

// valueText is a value as text: a string as it is, a number in its decimal form; a null is an error.
func valueText(v parquet.Value, column string) (string, error) {
	if v.IsNull() {
		return "", fmt.Errorf("column %q is null", column)
	}
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		if len(b) > maxRowBytes {
			return "", fmt.Errorf("column %q holds %d bytes, more than %d MiB", column, len(b), maxRowBytes>>20)
		}
		return string(b), nil
	case parquet.Boolean:
		return strconv.FormatBool(v.Boolean()), nil
	case parquet.Int32:
		return strconv.FormatInt(int64(v.Int32()), 10), nil
	case parquet.Int64:
		return strconv.FormatInt(v.Int64(), 10), nil
	case parquet.Float:
		return strconv.FormatFloat(float64(v.Float()), 'g', -1, 32), nil
	case parquet.Double:
		return strconv.FormatFloat(v.Double(), 'g', -1, 64), nil
	}
	return "", fmt.Errorf("column %q holds %s values, not strings or numbers", column, v.Kind())
}

// columnValues reads one column chunk's values in order, a page at a time.
type columnValues struct {
	pages parquet.Pages
	page  parquet.Page
	vals  parquet.ValueReader
	buf   []parquet.Value
	i, n  int
	done  bool
}

// next is the column's next value, or io.EOF after its last. A byte-array value stays valid until the
// page after its own is read: the caller copies it before asking again.
func (c *columnValues) next() (parquet.Value, error) {
	for c.i >= c.n {
		if c.done {
			return parquet.Value{}, io.EOF
		}
		if c.vals != nil {
			n, err := c.vals.ReadValues(c.buf)
			c.i, c.n = 0, n
			if err == io.EOF || (n == 0 && err == nil) { // a reader that gives nothing is taken at its word
				c.vals = nil // the page is released once its values are used (below)
			} else if err != nil {
				return parquet.Value{}, err
			}
			continue
		}
		if c.page != nil {
			parquet.Release(c.page)
			c.page = nil
		}
		page, err := c.pages.ReadPage()
		if err == io.EOF {
			c.done = true
			continue
		}
		if err != nil {
			return parquet.Value{}, err
		}
		c.page, c.vals = page, page.Values()
	}
	v := c.buf[c.i]
	c.i++
	return v, nil
}

func (c *columnValues) close() {
	if c == nil {
		return
	}
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	c.pages.Close()
}

// checkParquetFrame checks a Parquet file's magic numbers and that its footer lies within it, before the
// library reads (and allocates) the footer.
func checkParquetFrame(f io.ReaderAt, size int64) error {
	if size < 12 {
		return fmt.Errorf("not a Parquet file: %d bytes", size)
	}
	var head [4]byte
	var tail [8]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return err
	}
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	switch {
	case string(tail[4:]) == "PARE":
		return fmt.Errorf("an encrypted Parquet file: not supported")
	case string(head[:]) != "PAR1" || string(tail[4:]) != "PAR1":
		return fmt.Errorf("not a Parquet file (no PAR1 at its start and end)")
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-12 {
		return fmt.Errorf("not a readable Parquet file: a footer of %d bytes in a file of %d", n, size)
	}
	return nil
}

// parquetTurnColumns is the top-level column names of a Parquet file of turns, or nil for a file of dialogue
// records or one that cannot be read.
func parquetTurnColumns(path string, cols Columns) (names []string) {
	defer func() {
		if recover() != nil {
			names = nil
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || checkParquetFrame(f, st.Size()) != nil {
		return nil
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil
	}
	if recs, err := parquetRecordsOf(path, pf.Schema(), cols); err != nil || recs != nil {
		return nil
	}
	for _, c := range pf.Schema().Fields() {
		names = append(names, c.Name())
	}
	return names
}
