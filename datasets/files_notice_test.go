package datasets

import (
	"path/filepath"
	"strings"
	"testing"
)

// seqRow is a Parquet row of a file of turns whose order column is called seq.
type seqRow struct {
	ID      string `parquet:"dialogue_id"`
	Seq     int64  `parquet:"seq"`
	Speaker string `parquet:"speaker"`
	Text    string `parquet:"text"`
}

// A file of turns with a column that looks like a turn order gets a notice when the turn column is left to its
// default and the file has no column "turn"; a named turn column, a "turn" column, or a file of dialogue
// records get none.
func TestTurnColumnNotice(t *testing.T) {
	dir := t.TempDir()
	pq := filepath.Join(dir, "turns.parquet")
	writeParquet(t, pq, []seqRow{{"a", 1, "user", "hi"}}, 10)
	for _, c := range []struct {
		name, file, content string
		turn                string // data.columns.turn
		want                string // in the one notice; "" for none
	}{
		{"turn_no", "support.csv", "dialogue_id,turn_no,speaker,text\na,1,user,hi\n", "", `support.csv: column "turn_no" looks like a turn order, but data.columns.turn is not set and there is no column "turn", so each dialogue's rows are taken in file order; set [data.columns] turn = "turn_no" (data check --turn-column turn_no)`},
		{"Position in a TSV", "support.tsv", "dialogue_id\tPosition\tspeaker\ttext\n", "", `column "Position" looks like a turn order`},
		{"turn_id", "support.csv", "turn_id,dialogue_id,speaker,text\n", "", `set [data.columns] turn = "turn_id"`},
		{"turn is read", "support.csv", "dialogue_id,turn,turn_no,speaker,text\n", "", ""},
		{"turn named", "support.csv", "dialogue_id,turn_no,speaker,text\n", "turn_no", ""},
		{"no such column", "support.csv", "dialogue_id,speaker,text,timestamp\n", "", ""},
		{"records", "chats.jsonl", `{"turn_no": 1, "messages": []}` + "\n", "", ""},
		{"parquet", "", "", "", `turns.parquet: column "seq" looks like a turn order`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := pq
			if c.file != "" {
				path = putTestFile(t, t.TempDir(), c.file, []byte(c.content))
			}
			got := FileSet{Paths: []string{path}, Columns: Columns{Turn: c.turn}}.Notices()
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("notices %q, want none", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want) || !strings.HasPrefix(got[0], path)):
				t.Errorf("notices %q, want one with %q", got, c.want)
			}
		})
	}
}
