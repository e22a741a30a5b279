package datasets

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"convrep/tokenizers"
)

// fileRow is one turn of the test tables.
type fileRow struct {
	ID      string `parquet:"dialogue_id"`
	Turn    int64  `parquet:"turn"`
	Speaker string `parquet:"speaker"`
	Text    string `parquet:"text"`
	Domain  string `parquet:"domain"`
}

// testRows are two dialogues: the first with its rows out of turn order and two user turns in a row, the
// second with an empty utterance and untidy white space.
var testRows = []fileRow{
	{"c1", 2, "agent", "Sure, what is the order number?", "Billing"},
	{"c1", 1, "Customer", "I was charged twice.", "Billing"},
	{"c1", 3, "customer", "It is 48213.", ""},
	{"c1", 4, "customer", "Placed on the 3rd.", ""},
	{"c2", 1, "user", "  Where is\nmy parcel? ", "shipping"},
	{"c2", 2, "system", "", "shipping"},
	{"c2", 3, "bot", "It arrives tomorrow.", "shipping"},
}

// testDialogues are testRows read (corpus left empty), with and without merging.
func testDialogues(merge bool) []Dialogue {
	c1 := []Turn{{User, "I was charged twice."}, {System, "Sure, what is the order number?"}, {User, "It is 48213."}, {User, "Placed on the 3rd."}}
	if merge {
		c1 = []Turn{c1[0], c1[1], {User, "It is 48213. Placed on the 3rd."}}
	}
	c2 := []Turn{{User, "Where is my parcel?"}, {System, "It arrives tomorrow."}}
	return []Dialogue{{ID: "c1", Domain: "billing", Turns: c1}, {ID: "c2", Domain: "shipping", Turns: c2}}
}

func withCorpus(ds []Dialogue, corpus string) []Dialogue {
	out := append([]Dialogue{}, ds...)
	for i := range out {
		out[i].Corpus = corpus
	}
	return out
}

// tableBytes writes rows as CSV (or TSV) with a header of names; cells gives a row's cells.
func tableBytes(t *testing.T, tsv bool, names []string, rows [][]string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if tsv {
		w.Comma = '\t'
	}
	if err := w.Write(names); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func testTable(t *testing.T, tsv bool) []byte {
	var rows [][]string
	for _, r := range testRows {
		rows = append(rows, []string{r.Text, r.ID, r.Speaker, strconv.FormatInt(r.Turn, 10), r.Domain, "x"})
	}
	// The columns in another order than the roles, and one more that is not read.
	return tableBytes(t, tsv, []string{"text", "dialogue_id", "speaker", "turn", "domain", "channel"}, rows)
}

func testJSONL(t *testing.T, corpus string) []byte {
	var b bytes.Buffer
	ds := withCorpus(testDialogues(false), corpus)
	// Unmerged, untidy turns as a convert without --merge-speakers writes them.
	ds[1].Turns = []Turn{{User, "  Where is\nmy parcel? "}, {System, ""}, {System, "It arrives tomorrow."}}
	if err := WriteJSONL(&b, ds); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeParquet writes rows as one Parquet file, in row groups of at most perGroup rows.
func writeParquet[T any](t *testing.T, path string, rows []T, perGroup int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f, parquet.MaxRowsPerRowGroup(perGroup))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readTestFiles(t *testing.T, s FileSet, opt ReadOptions) ([]Dialogue, error) {
	t.Helper()
	return ReadFiles(s, opt)
}

// Every format reads the same dialogues: rows put in turn order, speakers mapped, text cleaned, empty
// utterances dropped, domains lower-cased, and turns merged with MergeSameSpeaker.
func TestFileFormats(t *testing.T) {
	for _, c := range []struct {
		name   string
		write  func(t *testing.T, dir string) string // returns the path to read
		corpus string
	}{
		{"csv", func(t *testing.T, dir string) string {
			return putTestFile(t, dir, "support.csv", testTable(t, false))
		}, "support"},
		{"csv.gz", func(t *testing.T, dir string) string {
			return putTestFile(t, dir, "support.csv.gz", gzipTestBytes(t, testTable(t, false)))
		}, "support"},
		{"tsv", func(t *testing.T, dir string) string {
			return putTestFile(t, dir, "chats.TSV", testTable(t, true))
		}, "chats"},
		{"jsonl", func(t *testing.T, dir string) string {
			return putTestFile(t, dir, "chats.jsonl", testJSONL(t, "mine"))
		}, "mine"},
		{"jsonl.gz", func(t *testing.T, dir string) string {
			return putTestFile(t, dir, "chats.jsonl.gz", gzipTestBytes(t, testJSONL(t, "mine")))
		}, "mine"},
		{"parquet file", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "train.parquet")
			writeParquet(t, p, testRows, 3) // c1's rows over two row groups
			return p
		}, "train"},
		{"parquet folder of two shards", func(t *testing.T, dir string) string {
			root := filepath.Join(dir, "hf_export")
			writeParquet(t, filepath.Join(root, "data", "train-00000-of-00002.parquet"), testRows[:4], 2)
			writeParquet(t, filepath.Join(root, "data", "train-00001-of-00002.parquet"), testRows[4:], 1000)
			putTestFile(t, root, "dataset_info.json", []byte(`{}`))
			putTestFile(t, root, "data/_SUCCESS", nil)
			putTestFile(t, root, ".cache/x.parquet", []byte("not read"))
			return root
		}, "hf_export"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.write(t, t.TempDir())
			for _, merge := range []bool{false, true} {
				got, err := readTestFiles(t, FileSet{Paths: []string{path}}, ReadOptions{MergeSameSpeaker: merge})
				if err != nil {
					t.Fatal(err)
				}
				want := withCorpus(testDialogues(merge), c.corpus)
				if c.name == "jsonl" || c.name == "jsonl.gz" {
					want[0].Domain = "billing"
				}
				if !sameReadDialogues(got, want) || got[0].Corpus != c.corpus {
					t.Errorf("merge %v: read\n%+v\nwant\n%+v", merge, got, want)
				}
			}
		})
	}
}

// The column names and speaker labels can be set; without a turn column the rows stay in file order.
func TestFileColumnMapping(t *testing.T) {
	dir := t.TempDir()
	rows := [][]string{
		{"7", "caller", "Hello, my wifi is down."},
		{"7", "operator", "Have you restarted the router?"},
		{"7", "CALLER ", "Yes, twice."},
		{"8", "operator", "Good morning."},
	}
	path := putTestFile(t, dir, "calls.csv", tableBytes(t, false, []string{"call", "who", "said"}, rows))
	s := FileSet{Paths: []string{path}, Columns: Columns{Dialogue: "call", Speaker: "who", Text: "said"},
		Speakers: Speakers{User: []string{"Caller"}, System: []string{"operator"}}}
	got, err := readTestFiles(t, s, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Dialogue{
		{ID: "7", Corpus: "calls", Turns: []Turn{{User, "Hello, my wifi is down."}, {System, "Have you restarted the router?"}, {User, "Yes, twice."}}},
		{ID: "8", Corpus: "calls", Turns: []Turn{{System, "Good morning."}}},
	}
	if !sameReadDialogues(got, want) {
		t.Errorf("read %+v", got)
	}
	// A turn or domain column that is named must be there.
	for _, cols := range []Columns{{Dialogue: "call", Speaker: "who", Text: "said", Turn: "turn"}, {Dialogue: "call", Speaker: "who", Text: "said", Domain: "topic"}} {
		s.Columns = cols
		if _, err := readTestFiles(t, s, ReadOptions{}); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "column") {
			t.Errorf("columns %+v: error %v", cols, err)
		}
	}
	// The default labels do not apply once a list is given.
	s.Columns = Columns{Dialogue: "call", Speaker: "who", Text: "said"}
	s.Speakers = Speakers{User: []string{"caller"}, System: []string{"agent"}}
	if _, err := readTestFiles(t, s, ReadOptions{}); err == nil || !strings.Contains(err.Error(), `line 3 (dialogue 7): speaker "operator"`) {
		t.Errorf("unknown speaker: %v", err)
	}
}

func TestFileSetValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		s    FileSet
		want string
	}{
		{"no paths", FileSet{}, "no files"},
		{"empty path", FileSet{Paths: []string{"a.csv", " "}}, "file 2 is an empty path"},
		{"twice", FileSet{Paths: []string{"a.csv", "a.csv"}}, "a.csv is listed twice"},
		{"one column for two roles", FileSet{Paths: []string{"a.csv"}, Columns: Columns{Text: "speaker"}}, `columns speaker and text are both "speaker"`},
		{"speaker on both sides", FileSet{Paths: []string{"a.csv"}, Speakers: Speakers{User: []string{"Bot"}, System: []string{"bot "}}}, `speaker "bot" is both`},
		{"empty label", FileSet{Paths: []string{"a.csv"}, Speakers: Speakers{User: []string{""}}}, "empty speaker label"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	if err := (FileSet{Paths: []string{"a.csv"}}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestFileNamesAndFolders(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, want string }{
		{"notes.txt", "unknown format"},
		{"x.parquet.gz", "without .gz"},
		{"empty/", "holds no .parquet file"},
		{"missing.csv", "no such file"},
	} {
		p := filepath.Join(dir, c.name)
		switch {
		case strings.HasSuffix(c.name, "/"):
			os.MkdirAll(p, 0o755)
		case c.name != "missing.csv":
			putTestFile(t, dir, c.name, []byte("x"))
		}
		if _, err := (FileSet{Paths: []string{p}}).List(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// A malformed row or line fails the read naming the file and the line (CSV, TSV, JSONL) or row index
// (Parquet); under SkipBad it is counted and its dialogue skipped, and the others are read.
func TestFileMalformed(t *testing.T) {
	header := "dialogue_id,turn,speaker,text\n"
	good := "a,1,user,hello there\na,2,system,hi how can I help\n"
	for _, c := range []struct {
		name    string
		file    string // its name decides the format
		content string
		want    string // in the error, after the file's path
		kept    int    // dialogues read under SkipBad (-1: the file fails even so)
	}{
		{"unknown speaker", "t.csv", header + good + "b,1,robot,beep\nb,2,user,what\nc,1,user,fine\n", `: line 4 (dialogue b): speaker "robot" is neither a user speaker`, 2},
		{"turn not a number", "t.csv", header + good + "b,one,user,x\n", `: line 4 (dialogue b): turn "one" is not an integer`, 1},
		{"no turn number", "t.csv", header + good + "b,,user,x\n", `: line 4 (dialogue b): no turn number`, 1},
		{"no dialogue id", "t.csv", header + good + " ,1,user,x\nb,1,user,x\n", `: line 4: no dialogue id`, 1},
		{"too few fields", "t.csv", header + good + "b,1,user\nc,1,user,x\n", `: line 4 (dialogue b): 3 fields where the header has 4`, 2},
		{"bare quote", "t.csv", header + good + "b,1,user,say \"hi\nc,1,user,x\n", `: line 4: column 14: bare " in non-quoted-field`, 1},
		{"turn twice", "t.csv", header + good + "b,1,user,x\nb,1,system,y\nc,1,user,x\n", `: line 4 (dialogue b): turn 1 appears twice (line 4 and line 5)`, 2},
		{"rows apart", "t.csv", header + good + "b,1,user,x\na,3,user,again\n", `: line 5 (dialogue a): dialogue "a" of corpus t appears again`, 1}, // a is skipped whole
		{"no such column", "t.csv", "id,turn,speaker,text\n1,1,user,x\n", `: header row: no dialogue column "dialogue_id" among the columns (id, turn, speaker, text)`, -1},
		{"column twice", "t.csv", "dialogue_id,text,speaker,text\n", `: header row: two columns are called "text"`, -1},
		{"empty file", "t.csv", "", `: empty: want a header row`, -1},
		{"tab-separated", "t.tsv", "dialogue_id\tturn\tspeaker\ttext\na\t1\tuser\thi\na\tx\tuser\thi\n", `: line 3 (dialogue a): turn "x"`, 0},
		{"unclosed quote", "t.csv", header + good + "b,1,user,\"" + strings.Repeat("x", maxRowBytes+(1<<20)) + "\n", `: after line 3: a row longer than 4 MiB`, 0}, // the open dialogue may have lost a row
		{"jsonl not JSON", "t.jsonl", `{"id":"1","corpus":"c","turns":[]}` + "\n{oops\n", `: line 2: invalid character`, 1},
		{"jsonl bad speaker", "t.jsonl", `{"id":"1","corpus":"c","turns":[{"speaker":"bot","text":"x"}]}` + "\n", `: line 1 (dialogue 1): dialogue 1 turn 0: speaker "bot"`, 0},
		{"jsonl repeated id", "t.jsonl", `{"id":"1","corpus":"c","turns":[]}` + "\n" + `{"id":"1","corpus":"c","turns":[]}` + "\n", `: line 2 (dialogue 1): dialogue "1" of corpus c appears again`, 0}, // both records
		{"jsonl line too long", "t.jsonl", `{"id":"1","corpus":"c","turns":[]}` + "\n" + strings.Repeat(" ", maxLineBytes+10) + "\n" + `{"id":"2","corpus":"c","turns":[]}`, `: line 2: longer than 64 MiB`, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := putTestFile(t, t.TempDir(), c.file, []byte(c.content))
			s := FileSet{Paths: []string{path}}
			_, err := readTestFiles(t, s, ReadOptions{})
			if err == nil || !strings.Contains(err.Error(), path+c.want) {
				t.Fatalf("error %v\nwant %s%s", err, path, c.want)
			}
			log, logs := observedLogger()
			ds, err := readTestFiles(t, s, ReadOptions{SkipBad: true, Logger: log})
			switch {
			case c.kept < 0:
				if err == nil {
					t.Errorf("SkipBad: read %d dialogues of a file that cannot be read", len(ds))
				}
			case err != nil:
				t.Errorf("SkipBad: %v", err)
			case len(ds) != c.kept || loggedSkips(logs) == 0:
				t.Errorf("SkipBad: %d dialogues, %d skips logged; want %d dialogues and skips", len(ds), loggedSkips(logs), c.kept)
			}
		})
	}
}

// parquetBad is a table with a nullable text and an integer speaker, as HuggingFace writes a ClassLabel.
type parquetBad struct {
	ID      string  `parquet:"dialogue_id"`
	Speaker int32   `parquet:"speaker"`
	Text    *string `parquet:"text,optional"`
}

// parquetList holds a list column, as a dialogue-per-row export does.
type parquetList struct {
	ID      string   `parquet:"dialogue_id"`
	Speaker []string `parquet:"speaker,list"`
	Text    []string `parquet:"text,list"`
}

func TestParquetMalformed(t *testing.T) {
	str := func(s string) *string { return &s }
	dir := t.TempDir()
	good := filepath.Join(dir, "good.parquet")
	writeParquet(t, good, []parquetBad{{"a", 0, str("hello there")}, {"a", 1, str("hi")}}, 100)
	goodBytes, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	speakers := Speakers{User: []string{"0"}, System: []string{"1"}}
	for _, c := range []struct {
		name  string
		write func(path string)
		want  string
		kept  int
	}{
		{"null text", func(p string) {
			writeParquet(t, p, []parquetBad{{"a", 0, str("x")}, {"b", 0, nil}, {"b", 1, str("y")}, {"c", 0, str("z")}}, 2)
		}, `: row index 1 (dialogue b): column "text" is null`, 2},
		{"unknown class id", func(p string) {
			writeParquet(t, p, []parquetBad{{"a", 0, str("x")}, {"b", 7, str("y")}}, 100)
		}, `: row index 1 (dialogue b): speaker "7" is neither a user speaker (0)`, 1},
		{"list columns", func(p string) {
			writeParquet(t, p, []parquetList{{"a", []string{"user"}, []string{"x"}}}, 100)
		}, `: column "speaker" holds lists or records, not one value a row`, -1},
		{"not Parquet", func(p string) { os.WriteFile(p, []byte("dialogue_id,text\n"), 0o644) }, `: not a Parquet file`, -1},
		{"cut short", func(p string) { os.WriteFile(p, goodBytes[:len(goodBytes)/2], 0o644) }, `: not a Parquet file`, -1},
		{"footer beyond the file", func(p string) {
			b := append([]byte("PAR1"), make([]byte, 8)...)
			b = append(b, 0xff, 0xff, 0xff, 0x7f)
			os.WriteFile(p, append(b, "PAR1"...), 0o644)
		}, `: not a readable Parquet file: a footer of 2147483647 bytes`, -1},
		{"footer garbage", func(p string) {
			b := append([]byte("PAR1"), bytes.Repeat([]byte{0xaa}, 64)...)
			b = append(b, 64, 0, 0, 0)
			os.WriteFile(p, append(b, "PAR1"...), 0o644)
		}, `: not a readable Parquet file`, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.parquet")
			c.write(path)
			s := FileSet{Paths: []string{path}, Columns: Columns{Turn: ""}, Speakers: speakers}
			_, err := readTestFiles(t, s, ReadOptions{})
			if err == nil || !strings.Contains(err.Error(), path+c.want) {
				t.Fatalf("error %v\nwant %s%s", err, path, c.want)
			}
			ds, err := readTestFiles(t, s, ReadOptions{SkipBad: true})
			switch {
			case c.kept < 0 && err == nil:
				t.Errorf("SkipBad: read %d dialogues of a file that cannot be read", len(ds))
			case c.kept >= 0 && (err != nil || len(ds) != c.kept):
				t.Errorf("SkipBad: %d dialogues (%v), want %d", len(ds), err, c.kept)
			}
		})
	}
	// The class ids map through Speakers.
	ds, err := readTestFiles(t, FileSet{Paths: []string{good}, Speakers: speakers}, ReadOptions{})
	if err != nil || len(ds) != 1 || len(ds[0].Turns) != 2 || ds[0].Turns[1].Speaker != System {
		t.Errorf("read %+v, %v", ds, err)
	}
}

// A dialogue id is unique over the files of a set.
func TestFilesRepeatedDialogue(t *testing.T) {
	dir := t.TempDir()
	a := putTestFile(t, dir, "one/support.csv", []byte("dialogue_id,speaker,text\nx,user,hi\n"))
	b := putTestFile(t, dir, "two/support.csv", []byte("dialogue_id,speaker,text\ny,user,hi\nx,user,hi again\n"))
	_, err := readTestFiles(t, FileSet{Paths: []string{a, b}}, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), b+`: line 3 (dialogue x): dialogue "x" of corpus support appears again`) {
		t.Errorf("error %v", err)
	}
	c := putTestFile(t, dir, "three/chats.csv", []byte("dialogue_id,speaker,text\nx,user,hi\n"))
	if ds, err := readTestFiles(t, FileSet{Paths: []string{a, c}}, ReadOptions{}); err != nil || len(ds) != 2 {
		t.Errorf("the same id in two corpora: %d dialogues, %v", len(ds), err)
	}
}

// ReadAll reads the files after the corpora, and no corpus when only files are given.
func TestReadAllFiles(t *testing.T) {
	path := putTestFile(t, t.TempDir(), "support.csv", testTable(t, false))
	fs := &FileSet{Paths: []string{path}}
	ds, err := ReadAll(filepath.Join(t.TempDir(), "nothing"), nil, ReadOptions{Files: fs})
	if err != nil || !sameReadDialogues(ds, withCorpus(testDialogues(false), "support")) {
		t.Errorf("files only: %+v, %v", ds, err)
	}
	root := sharedCorpusRoot(t, "woz2")
	ds, err = ReadAll(filepath.Dir(root), []string{"woz2"}, ReadOptions{Files: fs})
	if err != nil || len(ds) != 1200+2 || ds[0].Corpus != "woz2" || ds[len(ds)-1].Corpus != "support" {
		t.Errorf("woz2 and a file: %d dialogues, %v", len(ds), err)
	}
}

// The cache key holds each file's size and content and the mapping: an edit of the same size, a renamed
// column, a speaker label all build anew; a touched file or a label's case does not.
func TestFilesCacheKey(t *testing.T) {
	dir := t.TempDir()
	csvPath := putTestFile(t, dir, "support.csv", testTable(t, false))
	shards := filepath.Join(dir, "hf")
	writeParquet(t, filepath.Join(shards, "a.parquet"), testRows[:4], 100)
	writeParquet(t, filepath.Join(shards, "b.parquet"), testRows[4:], 100)
	key := CacheKey{Files: &FileSet{Paths: []string{csvPath, shards}},
		TokenizerDir: tinyBERTDir(t), Tokenizer: tinyBERT(t),
		Pairs: PairKey{Variant: "dse", MinWords: 3, Sep: " [SEP] "}, MaxLength: 32, Truncation: tokenizers.TruncateRight}
	base, err := key.Digest()
	if err != nil {
		t.Fatal(err)
	}
	withFiles := func(k CacheKey, edit func(s *FileSet)) CacheKey {
		s := *k.Files
		edit(&s)
		k.Files = &s
		return k
	}
	for _, c := range []struct {
		name string
		key  func(t *testing.T) CacheKey
	}{
		{"file touched", func(t *testing.T) CacheKey {
			later := time.Now().Add(time.Hour)
			os.Chtimes(csvPath, later, later)
			return key
		}},
		{"label case", func(t *testing.T) CacheKey {
			return withFiles(key, func(s *FileSet) { s.Speakers.User = []string{"USER", "Customer", "client", "human", "usr"} })
		}},
		{"default column named", func(t *testing.T) CacheKey {
			return withFiles(key, func(s *FileSet) { s.Columns.Text = "text" })
		}},
	} {
		if d, err := c.key(t).Digest(); err != nil || d != base {
			t.Errorf("%s: digest changed (%v)", c.name, err)
		}
	}
	seen := map[string]string{base: "base"}
	for _, c := range []struct {
		name string
		key  func(t *testing.T) CacheKey
	}{
		{"csv edited, same size", func(t *testing.T) CacheKey {
			b, _ := os.ReadFile(csvPath)
			putTestFile(t, dir, "support.csv", bytes.Replace(b, []byte("twice"), []byte("twicE"), 1))
			return key
		}},
		{"shard edited", func(t *testing.T) CacheKey {
			writeParquet(t, filepath.Join(shards, "b.parquet"), testRows[5:], 100)
			return key
		}},
		{"shard added", func(t *testing.T) CacheKey {
			writeParquet(t, filepath.Join(shards, "c.parquet"), testRows[:1], 100)
			return key
		}},
		{"files reordered", func(t *testing.T) CacheKey {
			return withFiles(key, func(s *FileSet) { s.Paths = []string{shards, csvPath} })
		}},
		{"column", func(t *testing.T) CacheKey {
			return withFiles(key, func(s *FileSet) { s.Columns.Text = "message" })
		}},
		{"turn column named", func(t *testing.T) CacheKey {
			return withFiles(key, func(s *FileSet) { s.Columns.Turn = "turn" })
		}},
		{"speakers", func(t *testing.T) CacheKey {
			return withFiles(key, func(s *FileSet) { s.Speakers.System = []string{"agent"} })
		}},
		{"a public corpus too", func(t *testing.T) CacheKey {
			k := key
			k.Corpora, k.CorpusFiles = []string{"toy"}, []string{shards}
			return k
		}},
	} {
		d, err := c.key(t).Digest()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if prev, dup := seen[d]; dup {
			t.Errorf("%s: digest equals that of %s", c.name, prev)
		}
		seen[d] = c.name
	}
	// A file that cannot be listed fails the key.
	k := withFiles(key, func(s *FileSet) { s.Paths = []string{filepath.Join(dir, "gone.csv")} })
	if _, err := k.Digest(); err == nil {
		t.Error("a missing file made a key")
	}
}

// The shipped example reads with its experiment's mapping, and CountOne counts it as Count does (DSE's
// pair count over it is objectives/dse's TestPairCounterIsDSEPairs).
func TestExampleFileCount(t *testing.T) {
	s := FileSet{Paths: []string{filepath.Join("..", "examples", "own-dialogues", "support.csv")},
		Columns: Columns{Dialogue: "conversation_id", Speaker: "role", Text: "message", Domain: "topic"}}
	ds, err := readTestFiles(t, s, ReadOptions{MergeSameSpeaker: true})
	if err != nil {
		t.Fatal(err)
	}
	checkReadDialogues(t, "support", ds, true)
	st := Count(ds)
	if st.Dialogues != 41 || st.Turns != 269 { // 270 rows, two of one speaker in a row
		t.Errorf("%+v, want 41 dialogues of 269 turns", st)
	}
	var streamed Stats
	for _, d := range ds {
		streamed = streamed.Add(CountOne(d))
	}
	if streamed != st {
		t.Errorf("CountOne summed %+v, Count %+v", streamed, st)
	}
}

// Hostile bytes in any format give an error or dialogues, never a panic.
func FuzzFiles(f *testing.F) {
	f.Add([]byte("dialogue_id,turn,speaker,text\na,1,user,hi\n"), uint8(0))
	f.Add([]byte(`{"id":"1","corpus":"c","turns":[{"speaker":"user","text":"x"}]}`), uint8(1))
	f.Add([]byte("PAR1\x15\x04PAR1"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		name := []string{"f.csv", "f.jsonl", "f.parquet", "f.tsv"}[kind%4]
		path := putTestFile(t, t.TempDir(), name, data)
		for _, skip := range []bool{false, true} {
			ds, err := ReadFiles(FileSet{Paths: []string{path}}, ReadOptions{SkipBad: skip})
			if err != nil && !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			if err == nil && name != "f.jsonl" {
				checkReadDialogues(t, "f", ds, false)
			}
		}
	})
}

// Check finds a wrong mapping in a CSV's header or a Parquet schema before any row is read.
func TestFileSetCheck(t *testing.T) {
	dir := t.TempDir()
	csvPath := putTestFile(t, dir, "support.csv", testTable(t, false))
	pq := filepath.Join(dir, "train.parquet")
	writeParquet(t, pq, testRows, 100)
	jsonl := putTestFile(t, dir, "chats.jsonl", []byte("{not even JSON\n"))
	for _, c := range []struct {
		name string
		s    FileSet
		want string // "" for no error
	}{
		{"defaults", FileSet{Paths: []string{csvPath, pq, jsonl}}, ""},
		{"csv text column", FileSet{Paths: []string{csvPath}, Columns: Columns{Text: "message"}}, csvPath + `: header row: no text column "message"`},
		{"parquet turn column", FileSet{Paths: []string{pq}, Columns: Columns{Turn: "turn_id"}}, pq + `: no turn column "turn_id" among the columns (dialogue_id, turn, speaker, text, domain)`},
		{"not parquet", FileSet{Paths: []string{putTestFile(t, dir, "x.parquet", []byte("PAR1"))}}, "not a Parquet file"},
		{"mapping", FileSet{Paths: []string{csvPath}, Columns: Columns{Text: "speaker"}}, "columns speaker and text are both"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.Check()
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}
