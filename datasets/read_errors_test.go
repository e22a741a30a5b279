package datasets

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
)

// Under SkipBad a dialogue whose rows come back after another dialogue's is skipped whole, every run of its
// rows, wherever they are (docs/data.md, "Files of turns"); each run is a malformed record, listed with its
// place. The others are read.
func TestSkipBadScatteredDialogue(t *testing.T) {
	header := "conversation_id,role,message\n"
	for _, c := range []struct {
		name  string
		files map[string]string // path under the folder: content, read in path order
		kept  []string          // the dialogues read
		bad   []string          // the places of the malformed records, "file: place"
	}{
		{"rows come back", map[string]string{"support.csv": header +
			"T-1,customer,hi\nT-1,agent,hello\nT-1,customer,my order\nT-2,customer,refund please\nT-2,agent,sure\nT-1,agent,it is late\nT-3,customer,bye\n"},
			[]string{"T-2", "T-3"}, []string{"support.csv: line 2 (dialogue T-1)", "support.csv: line 7 (dialogue T-1)"}},
		{"three runs", map[string]string{"support.csv": header +
			"T-1,customer,a\nT-2,customer,b\nT-1,agent,c\nT-2,agent,d\nT-1,customer,e\n"},
			nil, []string{"support.csv: line 2 (dialogue T-1)", "support.csv: line 3 (dialogue T-2)", "support.csv: line 4 (dialogue T-1)",
				"support.csv: line 5 (dialogue T-2)", "support.csv: line 6 (dialogue T-1)"}},
		{"a malformed run first", map[string]string{"support.csv": header +
			"T-1,customer,hi\nT-1,robot,beep\nT-2,customer,ok\nT-1,agent,hello again\n"},
			[]string{"T-2"}, []string{"support.csv: line 3 (dialogue T-1)", "support.csv: line 5 (dialogue T-1)"}},
		{"in two files of one corpus", map[string]string{
			"a/support.csv": header + "T-1,customer,hi\nT-2,customer,x\n",
			"b/support.csv": header + "T-1,agent,hello\nT-3,customer,y\n"},
			[]string{"T-2", "T-3"}, []string{"a/support.csv: line 2 (dialogue T-1)", "b/support.csv: line 2 (dialogue T-1)"}},
		{"two corpora share an id", map[string]string{
			"a.csv": header + "T-1,customer,hi\n",
			"b.csv": header + "T-1,agent,hello\n"},
			[]string{"T-1", "T-1"}, nil},
		{"tab-separated", map[string]string{"support.tsv": "conversation_id\trole\tmessage\nT-1\tcustomer\thi\nT-2\tagent\tx\nT-1\tagent\ty\n"},
			[]string{"T-2"}, []string{"support.tsv: line 2 (dialogue T-1)", "support.tsv: line 4 (dialogue T-1)"}},
		{"records", map[string]string{"chats.jsonl": `{"conversation_id":"c1","messages":[{"role":"user","message":"hi"}]}` + "\n" +
			`{"conversation_id":"c2","messages":[{"role":"user","message":"yo"}]}` + "\n" + `{"conversation_id":"c1","messages":[{"role":"user","message":"again"}]}` + "\n"},
			[]string{"c2"}, []string{"chats.jsonl: line 1 (dialogue c1)", "chats.jsonl: line 3 (dialogue c1)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for name, content := range c.files {
				paths = append(paths, putTestFile(t, dir, name, []byte(content)))
			}
			slices.Sort(paths)
			s := FileSet{Paths: paths, Columns: Columns{Dialogue: "conversation_id", Speaker: "role", Text: "message"}}
			var bad []string
			ds, err := ReadFiles(s, ReadOptions{SkipBad: true, Bad: func(e *RecordError) {
				rel, _ := filepath.Rel(dir, e.Source)
				bad = append(bad, filepath.ToSlash(rel)+": "+e.Record)
			}})
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, d := range ds {
				kept = append(kept, d.ID)
			}
			if !slices.Equal(kept, c.kept) || !slices.Equal(bad, c.bad) {
				t.Errorf("kept %q, malformed %q\nwant %q and %q", kept, bad, c.kept, c.bad)
			}
			if c.bad == nil {
				return
			}
			// Without SkipBad the read stops, at the first malformed record.
			if _, err := ReadFiles(s, ReadOptions{}); err == nil {
				t.Errorf("read without SkipBad")
			}
		})
	}
}

// Under SkipBad each of a file's first MaxListedBad malformed records is logged at info level with its place
// and problem, and the file's count after it says how many there were and how many were listed; with
// ReadOptions.Bad set, it hears every one instead of the log.
func TestSkipBadListsRecords(t *testing.T) {
	var b strings.Builder
	b.WriteString("dialogue_id,speaker,text\n")
	const nBad = MaxListedBad + 50
	for i := range nBad {
		fmt.Fprintf(&b, "d%d,user,hello\nd%d,robot,beep\n", i, i)
	}
	b.WriteString("ok,user,fine\n")
	path := putTestFile(t, t.TempDir(), "t.csv", []byte(b.String()))
	heard := 0
	log, logs := observedLogger()
	ds, err := ReadFiles(FileSet{Paths: []string{path}}, ReadOptions{SkipBad: true, Logger: log, Bad: func(*RecordError) { heard++ }})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || heard != nBad || logs.FilterMessage("skipped a malformed record").Len() != 0 || loggedSkips(logs) != nBad {
		t.Errorf("read %d dialogues, heard of %d malformed records, logged %d and a count of %d; want 1, %d, 0 and %d", len(ds), heard,
			logs.FilterMessage("skipped a malformed record").Len(), loggedSkips(logs), nBad, nBad)
	}
	log, logs = observedLogger()
	if _, err := ReadFiles(FileSet{Paths: []string{path}}, ReadOptions{SkipBad: true, Logger: log}); err != nil {
		t.Fatal(err)
	}
	listed := logs.FilterMessage("skipped a malformed record").All()
	if len(listed) != MaxListedBad {
		t.Fatalf("%d records listed, want %d", len(listed), MaxListedBad)
	}
	first := listed[0]
	if m := first.ContextMap(); first.Level != zapcore.InfoLevel || m["file"] != path || m["record"] != "line 3 (dialogue d0)" ||
		!strings.HasPrefix(m["problem"].(string), `speaker "robot" is neither a user speaker`) {
		t.Errorf("first listed: %v %v", first.Level, first.ContextMap())
	}
	counts := logs.FilterMessage("skipped malformed records").All()
	if len(counts) != 1 || counts[0].ContextMap()["skipped"] != int64(nBad) || counts[0].ContextMap()["listed"] != int64(MaxListedBad) {
		t.Errorf("count lines %v", counts)
	}
}
