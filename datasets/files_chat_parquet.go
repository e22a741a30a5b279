package datasets

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// Parquet files of dialogue records hold a dialogue per row, with its messages in a nested column, as
// HuggingFace datasets' to_parquet writes a chat or dialogue corpus:
//   - a list of structs (messages: list<struct<role, content>>, UltraChat);
//   - a list of strings whose speakers alternate (dialog: list<string>, DailyDialog), with FirstSpeaker;
//   - a struct of parallel lists (turns: struct<speaker: list<int>, utterance: list<string>, ...>,
//     MultiWOZ 2.2), with the text list named in Columns.Text.
//
// Only the leaf columns needed are read (the speakers, the texts, the id and the domain), a row group at a
// time and a page at a time, as a file of turns is; a row's values are gathered by their repetition levels.

// parquetRecords is the plan for reading a Parquet file of dialogue records.
type parquetRecords struct {
	fields recordFields
	kind   listKind
	// The leaf columns: the speakers (none for a list of strings) and texts, each a list column, and the
	// id and domain, flat columns (nil where absent).
	speaker, text *listLeaf
	id, domain    *parquet.LeafColumn
}

// listLeaf is a leaf column below one list: a row holds one value per element, or one value whose
// definition level is below elemDef for a null or empty list.
type listLeaf struct {
	name    string // its path, dotted, for errors
	col     parquet.LeafColumn
	elemDef int // the definition level from which an element is there
}

// parquetRecordsOf finds a file's dialogue-record layout: nil when the file is one of turns (it has no
// list column named in Columns.Messages, "messages" or "conversations").
func parquetRecordsOf(path string, schema *parquet.Schema, cols Columns) (*parquetRecords, error) {
	top := map[string]parquet.Field{}
	var names []string
	for _, f := range schema.Fields() {
		top[f.Name()] = f
		names = append(names, f.Name())
	}
	list := strings.TrimSpace(cols.Messages)
	if list == "" {
		for _, name := range []string{"messages", "conversations"} {
			if f, ok := top[name]; ok && !f.Leaf() {
				list = name
				break
			}
		}
	}
	node, ok := top[list]
	if list == "" || !ok {
		return nil, nil
	}
	p := &parquetRecords{fields: recordFieldsFor(list, cols)}
	f := p.fields
	fail := func(format string, args ...any) (*parquetRecords, error) {
		return nil, fmt.Errorf("%s: column %q: %s", path, list, fmt.Sprintf(format, args...))
	}
	var err error
	if elem, inner, ok := listElement(node); ok {
		base := append([]string{list}, inner...)
		elemDef := definitionDepth(node, inner)
		if elem.Leaf() {
			if cols.FirstSpeaker == "" {
				return fail("a list of strings: set data.columns.first_speaker (user or system), the side of the first; the speakers alternate")
			}
			p.kind = listOfStrings
			if p.text, err = lookupListLeaf(schema, base, elemDef); err != nil {
				return fail("%v", err)
			}
		} else {
			p.kind = listOfMessages
			if p.speaker, err = lookupListLeaf(schema, append(slices.Clone(base), f.speaker), elemDef); err != nil {
				return fail("messages without a %q field (%s): name the fields in data.columns.speaker and text", f.speaker, fieldNames(elem))
			}
			if p.text, err = lookupListLeaf(schema, append(slices.Clone(base), f.text), elemDef); err != nil {
				return fail("messages without a %q field (%s): name the fields in data.columns.speaker and text", f.text, fieldNames(elem))
			}
		}
	} else if !node.Leaf() {
		p.kind = parallelLists
		for _, side := range []struct {
			name string
			leaf **listLeaf
		}{{f.speaker, &p.speaker}, {f.text, &p.text}} {
			var child parquet.Node
			for _, c := range node.Fields() {
				if c.Name() == side.name {
					child = c
				}
			}
			if child == nil {
				return fail("a struct without a %q field (%s): name its speaker and text lists in data.columns.speaker and text", side.name, fieldNames(node))
			}
			_, inner, ok := listElement(child)
			if !ok {
				return fail("field %q is not a list", side.name)
			}
			path := append([]string{list, side.name}, inner...)
			if *side.leaf, err = lookupListLeaf(schema, path, definitionDepth(node, nil)+definitionDepth(child, inner)); err != nil {
				return fail("%v", err)
			}
		}
	} else {
		return fail("one value a row, not a list of messages")
	}
	if cols.FirstSpeaker != "" && p.kind != listOfStrings {
		return fail("first_speaker is set, but the column is not a list of strings")
	}
	flat := func(name string, named bool, what string) (*parquet.LeafColumn, error) {
		lc, ok := schema.Lookup(name)
		if _, there := top[name]; !there {
			if named {
				return nil, fmt.Errorf("%s: %w", path, missingField(what, name, names))
			}
			return nil, nil
		}
		if !ok || lc.MaxRepetitionLevel > 0 || lc.Node == nil || !lc.Node.Leaf() {
			return nil, fmt.Errorf("%s: column %q holds lists or records, not one %s a row", path, name, what)
		}
		return &lc, nil
	}
	if p.id, err = flat(f.id, f.idNamed, "id"); err != nil {
		return nil, err
	}
	if p.id == nil && !f.idNamed && f.list != "dialogue_id" {
		if p.id, err = flat("dialogue_id", false, "id"); err != nil {
			return nil, err
		}
	}
	if p.domain, err = flat(f.domain, f.domainNamed, "domain"); err != nil {
		return nil, err
	}
	return p, nil
}

// missingField is the error of a file without a field it was told to read.
func missingField(what, name string, names []string) error {
	return fmt.Errorf("no %s column %q among the columns (%s)", what, name, strings.Join(names, ", "))
}

// listElement finds a list's element node and the path to it below the list's node: the standard
// three-level list (a group holding one repeated group holding the element), or the older two-level forms
// (a repeated group or value standing for its elements).
func listElement(n parquet.Node) (parquet.Node, []string, bool) {
	if n.Repeated() {
		return n, nil, true
	}
	if n.Leaf() || len(n.Fields()) != 1 || !n.Fields()[0].Repeated() {
		return nil, nil, false
	}
	rep := n.Fields()[0]
	if !rep.Leaf() && len(rep.Fields()) == 1 && rep.Name() != "array" && !strings.HasSuffix(rep.Name(), "_tuple") {
		return rep.Fields()[0], []string{rep.Name(), rep.Fields()[0].Name()}, true
	}
	return rep, []string{rep.Name()}, true
}

// definitionDepth is the definition level from which a list's element is there: one for each optional or
// repeated node from the list's node (n) down to its repeated node along inner.
func definitionDepth(n parquet.Node, inner []string) int {
	d := 0
	for {
		if n.Optional() || n.Repeated() {
			d++
		}
		if n.Repeated() || len(inner) == 0 {
			return d
		}
		var next parquet.Node
		for _, c := range n.Fields() {
			if c.Name() == inner[0] {
				next = c
			}
		}
		if next == nil {
			return d
		}
		n, inner = next, inner[1:]
	}
}

// lookupListLeaf finds the leaf column at path, which must be below exactly one list.
func lookupListLeaf(schema *parquet.Schema, path []string, elemDef int) (*listLeaf, error) {
	lc, ok := schema.Lookup(path...)
	name := strings.Join(path, ".")
	switch {
	case !ok || lc.Node == nil:
		return nil, fmt.Errorf("no column %s", name)
	case !lc.Node.Leaf():
		return nil, fmt.Errorf("%s holds records (content given as a list of parts?), not one value a message", name)
	case lc.MaxRepetitionLevel != 1:
		return nil, fmt.Errorf("%s holds lists within lists, not one value a message", name)
	}
	return &listLeaf{name: name, col: lc, elemDef: elemDef}, nil
}

func fieldNames(n parquet.Node) string {
	var out []string
	for _, f := range n.Fields() {
		out = append(out, fmt.Sprintf("%q", f.Name()))
	}
	return strings.Join(out, ", ")
}

// columns are the leaf columns read, in the order readParquetRecords keeps their readers.
func (p *parquetRecords) columns() []*parquet.LeafColumn {
	var out []*parquet.LeafColumn
	for _, l := range []*listLeaf{p.speaker, p.text} {
		if l != nil {
			out = append(out, &l.col)
		} else {
			out = append(out, nil)
		}
	}
	return append(out, p.id, p.domain)
}

// shapeName names the layout for data check.
func (p *parquetRecords) shapeName(first string) string {
	return p.fields.shapeName(p.kind, first)
}

// listValue is one element's value of a list column in a row, copied out of its page.
type listValue struct {
	text string
	ok   bool // not null
}

// listReader reads a list column's values a row at a time.
type listReader struct {
	leaf   *listLeaf
	vals   *columnValues
	peeked bool
	next   parquet.Value
	row    []listValue
}

// readRow gathers the next row's elements into l.row; io.EOF after the last row. A row over
// maxDialogueBytes is read to its end and reported.
func (l *listReader) readRow() error {
	l.row = l.row[:0]
	first := true
	size := 0
	var tooLarge error
	for {
		if !l.peeked {
			v, err := l.vals.next()
			if err == io.EOF && !first {
				return tooLarge
			}
			if err != nil {
				return err
			}
			l.next, l.peeked = v, true
		}
		v := l.next
		if !first && v.RepetitionLevel() == 0 {
			return tooLarge
		}
		l.peeked = false
		if first && v.RepetitionLevel() != 0 {
			return fmt.Errorf("column %s: a row starts with a repeated value", l.leaf.name)
		}
		first = false
		if v.DefinitionLevel() < l.leaf.elemDef {
			continue // a null or empty list
		}
		if v.DefinitionLevel() < l.leaf.col.MaxDefinitionLevel || v.IsNull() {
			l.row = append(l.row, listValue{})
			continue
		}
		s, err := valueText(v, l.leaf.name)
		if err != nil && tooLarge == nil {
			tooLarge = valueError{err}
		}
		size += len(s) + rowOverhead
		if size > maxDialogueBytes && tooLarge == nil {
			tooLarge = valueError{fmt.Errorf("column %s: the row's messages hold more than %d MiB", l.leaf.name, maxDialogueBytes>>20)}
		}
		if tooLarge == nil {
			l.row = append(l.row, listValue{text: s, ok: true})
		}
	}
}

// readParquetRecords reads a Parquet file of dialogue records, a row group at a time. Places are row
// indices, counted from 0 over the file.
func readParquetRecords(src *source, path string, pf *parquet.File, p *parquetRecords, cols Columns, sp speakerMap, merge bool,
	emit func(place string, d Dialogue) error) error {
	first := Speaker(strings.ToLower(strings.TrimSpace(cols.FirstSpeaker)))
	src.shape = p.shapeName(string(first))
	c := newChatTurns(sp, merge, p.fields.speaker)
	base := baseNoExt(path)
	md := pf.Metadata()
	leaves := p.columns()
	var row int64
	for gi, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		readers := make([]*columnValues, len(leaves))
		for k, lc := range leaves {
			if lc == nil {
				continue
			}
			ci := lc.ColumnIndex
			if ci >= len(chunks) {
				return fmt.Errorf("%s: row group %d has %d columns, not %d", path, gi, len(chunks), ci+1)
			}
			if gi < len(md.RowGroups) && ci < len(md.RowGroups[gi].Columns) {
				if n := md.RowGroups[gi].Columns[ci].MetaData.TotalUncompressedSize; n < 0 || n > maxParquetChunk {
					return fmt.Errorf("%s: row group %d: column %q declares %d bytes, more than the %d MiB a column chunk may hold here",
						path, gi, strings.Join(lc.Path, "."), n, maxParquetChunk>>20)
				}
			}
			readers[k] = &columnValues{pages: chunks[ci].Pages(), buf: make([]parquet.Value, 256)}
		}
		err := readRecordRows(src, p, readers, c, first, base, &row, emit)
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
	return nil
}

// readRecordRows reads one row group's rows through its column readers (speaker, text, id, domain, nil
// where not read), in step.
func readRecordRows(src *source, p *parquetRecords, readers []*columnValues, c *chatTurns, first Speaker, base string,
	row *int64, emit func(place string, d Dialogue) error) error {
	var spk, txt *listReader
	if readers[0] != nil {
		spk = &listReader{leaf: p.speaker, vals: readers[0]}
	}
	txt = &listReader{leaf: p.text, vals: readers[1]}
	unreadable := func(place string, err error) error {
		if err := src.bad(place, fmt.Errorf("unreadable, so is the rest of the file: %w", err)); err != nil {
			return err
		}
		return errStopFile
	}
	for ; ; *row++ {
		place := fmt.Sprintf("row index %d", *row)
		terr := txt.readRow()
		if terr == io.EOF {
			return nil
		}
		var rowErr error
		if terr != nil && !isValueError(terr) {
			return unreadable(place, terr)
		}
		rowErr = terr
		if spk != nil {
			if err := spk.readRow(); err == io.EOF {
				return unreadable(place, fmt.Errorf("the columns of a row group hold different numbers of rows"))
			} else if err != nil && !isValueError(err) {
				return unreadable(place, err)
			} else if rowErr == nil {
				rowErr = err
			}
		}
		flat := func(k int, name string) (string, bool, error) {
			r := readers[k]
			if r == nil {
				return "", false, nil
			}
			v, err := r.next()
			if err == io.EOF {
				return "", false, fmt.Errorf("the columns of a row group hold different numbers of rows")
			}
			if err != nil {
				return "", false, err
			}
			if v.IsNull() {
				return "", false, nil
			}
			s, err := valueText(v, name)
			if err != nil {
				return "", false, valueError{err}
			}
			return s, true, nil
		}
		id, _, ierr := flat(2, p.fields.id)
		domain, _, derr := flat(3, p.fields.domain)
		for _, err := range []error{ierr, derr} {
			if err != nil && !isValueError(err) {
				return unreadable(place, err)
			}
			if rowErr == nil {
				rowErr = err
			}
		}
		id = strings.TrimSpace(id)
		if rowErr == nil && p.fields.idNamed && id == "" {
			rowErr = fmt.Errorf("no id (column %q, data.columns.dialogue)", p.fields.id)
		}
		c.reset()
		d := &c.d
		d.ID = recordID(id, id != "", base, *row)
		d.Corpus, d.Domain = src.corpus, domainName(domain)
		if rowErr == nil {
			rowErr = recordMessages(p, c, spk, txt, first)
		}
		if rowErr != nil {
			if err := src.bad(placeOf(place, id), rowErr); err != nil {
				return err
			}
			continue
		}
		src.dropped.add(c.dropped)
		if err := emit(placeOf(place, d.ID), *d); err != nil {
			return err
		}
	}
}

// recordMessages adds a row's messages to c.
func recordMessages(p *parquetRecords, c *chatTurns, spk, txt *listReader, first Speaker) error {
	if p.kind == listOfStrings {
		for i, t := range txt.row {
			if err := c.alternating(i, first, t.text, t.ok); err != nil {
				return err
			}
		}
		return nil
	}
	if len(spk.row) != len(txt.row) {
		return fmt.Errorf("%d speakers (%s) and %d texts (%s)", len(spk.row), p.speaker.name, len(txt.row), p.text.name)
	}
	for i, t := range txt.row {
		s := spk.row[i]
		if err := c.message(i, s.text, s.ok, t.text, t.ok, false, 0); err != nil {
			return err
		}
	}
	return nil
}

// valueError is a value that cannot be read as text: the row is malformed, the file readable.
type valueError struct{ error }

func (e valueError) Unwrap() error { return e.error }

func isValueError(err error) bool {
	var ve valueError
	return errors.As(err, &ve)
}
