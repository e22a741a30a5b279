package datasets

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The column roles of a table of turns (CSV, TSV, Parquet), in the order columnSpecs lists them.
const (
	colDialogue = iota
	colTurn
	colSpeaker
	colText
	colDomain
	numColumns
)

var columnRoles = [numColumns]string{"dialogue", "turn", "speaker", "text", "domain"}

// columnSpec is a column to find in a file: its name, and whether it may be absent (the turn and domain
// columns left to their defaults).
type columnSpec struct {
	name     string
	optional bool
}

// specs are the columns to look for, by role; raw is Columns as given (empty names take the defaults).
func (raw Columns) specs() [numColumns]columnSpec {
	n := FileSet{Columns: raw}.normalized().Columns
	return [numColumns]columnSpec{
		colDialogue: {name: n.Dialogue},
		colTurn:     {name: n.Turn, optional: strings.TrimSpace(raw.Turn) == ""},
		colSpeaker:  {name: n.Speaker},
		colText:     {name: n.Text},
		colDomain:   {name: n.Domain, optional: strings.TrimSpace(raw.Domain) == ""},
	}
}

// findColumns maps each role to its position among names (-1 where an optional column is absent).
func findColumns(specs [numColumns]columnSpec, names []string) ([numColumns]int, error) {
	var idx [numColumns]int
	for role, s := range specs {
		idx[role] = -1
		for i, n := range names {
			if n != s.name {
				continue
			}
			if idx[role] >= 0 {
				return idx, fmt.Errorf("two columns are called %q", s.name)
			}
			idx[role] = i
		}
		if idx[role] < 0 && !s.optional {
			return idx, missingColumn(role, s.name, names)
		}
	}
	return idx, nil
}

// missingColumn is the error of a file without the column of role.
func missingColumn(role int, name string, names []string) error {
	shown := names
	if len(shown) > 20 {
		shown = append(shown[:20:20], "…")
	}
	return fmt.Errorf("no %s column %q among the columns (%s)", columnRoles[role], name, strings.Join(shown, ", "))
}

// turnRow is one good row of a table of turns.
type turnRow struct {
	place   string // "line 12", "row index 12"
	turn    int64
	speaker Speaker
	text    string
	domain  string
	dropped bool   // a row of a dropped speaker: it counts (by its label) and keeps its place in turn order
	label   string // the dropped speaker's label
}

// parseTurn reads a turn number: an integer, or a float with an integral value (pandas writes an integer
// column holding a missing value as floats).
func parseTurn(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("no turn number")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return int64(f), nil
	}
	return 0, fmt.Errorf("turn %q is not an integer", clip(s))
}

// dialogueRows gathers the consecutive rows of one dialogue and hands the dialogue on when a row of another
// one comes, or the file ends (flush). A malformed row spoils its dialogue: under SkipBad the row is counted
// and the whole dialogue dropped, so that the turns around the bad one are not taken as consecutive.
type dialogueRows struct {
	src     *source
	corpus  string
	merge   bool
	hasTurn bool // rows carry turn numbers, to be sorted by
	emit    func(place string, d Dialogue) error

	open    bool
	id      string
	start   string // the place of its first row
	rows    []turnRow
	bytes   int
	spoiled bool
}

// add takes a row of dialogue id (not empty); rowErr is what is wrong with it, if anything.
func (g *dialogueRows) add(id string, r turnRow, rowErr error) error {
	if !g.open || id != g.id {
		if err := g.flush(); err != nil {
			return err
		}
		g.open, g.id, g.start = true, strings.Clone(id), r.place
		g.src.opened(g.id)
	}
	if rowErr != nil {
		g.spoiled = true
		return g.src.bad(placeOf(r.place, id), rowErr)
	}
	if g.spoiled {
		return nil
	}
	if r.dropped {
		g.src.dropped.role(r.label, 1)
		return nil
	}
	g.bytes += len(r.text) + len(r.domain) + rowOverhead
	if g.bytes > maxDialogueBytes {
		g.spoiled = true
		return g.src.bad(placeOf(r.place, id), fmt.Errorf("the dialogue's rows hold more than %d MiB", maxDialogueBytes>>20))
	}
	g.rows = append(g.rows, r)
	return nil
}

// spoil marks the open dialogue as unusable (a row near it could not be read).
func (g *dialogueRows) spoil() { g.spoiled = g.open }

// flush hands on the open dialogue, if any and unspoiled: its rows in turn order, cleaned and merged as the
// corpora's turns are.
func (g *dialogueRows) flush() error {
	if !g.open {
		return nil
	}
	rows, id, start, spoiled := g.rows, g.id, g.start, g.spoiled
	g.open, g.rows, g.bytes, g.spoiled = false, g.rows[:0], 0, false
	if cap(rows) > 1<<12 {
		g.rows = nil // let a long dialogue's rows go
	}
	if spoiled {
		return nil
	}
	if g.hasTurn {
		slices.SortStableFunc(rows, func(a, b turnRow) int {
			switch {
			case a.turn < b.turn:
				return -1
			case a.turn > b.turn:
				return 1
			}
			return 0
		})
		for i := 1; i < len(rows); i++ {
			if rows[i].turn == rows[i-1].turn {
				return g.src.bad(placeOf(start, id), fmt.Errorf("turn %d appears twice (%s and %s)", rows[i].turn, rows[i-1].place, rows[i].place))
			}
		}
	}
	d := Dialogue{ID: id, Corpus: g.corpus}
	for _, r := range rows {
		d.Turns = addTurn(d.Turns, r.speaker, r.text, g.merge)
		if d.Domain == "" {
			d.Domain = domainName(r.domain)
		}
	}
	return g.emit(placeOf(start, id), d)
}

// placeOf names a row with its dialogue's id.
func placeOf(place, id string) string {
	if id == "" {
		return place
	}
	return fmt.Sprintf("%s (dialogue %s)", place, clip(id))
}
