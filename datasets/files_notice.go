package datasets

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strings"
)

// turnLike are column names that usually hold a turn's order within its dialogue.
var turnLike = []string{"turn", "turn_no", "turn_id", "turn_number", "position", "seq"}

// Notices are what is worth a word before the set is read, though nothing is wrong: a file of turns with a
// column that looks like a turn order (turn_no, position, ...) that is not read as one, because the turn
// column is left to its default and the file has no column of that name, so each dialogue's rows are taken
// in file order. It reads each CSV and TSV file's header and each Parquet file's schema; a file it cannot
// read gives no notice (Check and the read report it).
func (s FileSet) Notices() []string {
	if strings.TrimSpace(s.Columns.Turn) != "" {
		return nil
	}
	files, err := s.files()
	if err != nil {
		return nil
	}
	var out []string
	for _, f := range files {
		names := tableColumns(f, s.Columns)
		if slices.Contains(names, DefaultColumns.Turn) {
			continue
		}
		for _, n := range names {
			if slices.Contains(turnLike, strings.ToLower(n)) {
				out = append(out, fmt.Sprintf("%s: column %q looks like a turn order, but data.columns.turn is not set and there is no column %q, "+
					"so each dialogue's rows are taken in file order; set [data.columns] turn = %q (data check --turn-column %s) to order them by it",
					f.path, n, DefaultColumns.Turn, n, n))
				break
			}
		}
	}
	return out
}

// tableColumns is the column names of a file of turns (CSV, TSV, a Parquet file a row per turn), or nil.
func tableColumns(f dialogueFile, cols Columns) (names []string) {
	switch f.format {
	case formatCSV, formatTSV:
		readFile(f.path, func(r io.Reader) error {
			cr := csv.NewReader(newRowBound(r))
			if f.format == formatTSV {
				cr.Comma = '\t'
			}
			names, _ = readHeader(f.path, cr)
			return nil
		})
	case formatParquet:
		names = parquetTurnColumns(f.path, cols)
	}
	return names
}
