package datasets

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// chatFixture is a file of testdata/chat (written by write_json.py and write_parquet.mjs beside it) and
// what reading it must give.
type chatFixture struct {
	file     string
	cols     Columns
	speakers Speakers
	want     []Dialogue // all of them, or the first ones (wantN)
	wantN    int        // the number of dialogues, where want holds only the first ones
	shape    string
	dropped  Dropped
}

func chatFixtures() []chatFixture {
	u := func(s string) Turn { return Turn{User, s} }
	s := func(s string) Turn { return Turn{System, s} }
	sharegpt := []Dialogue{
		{ID: "sg-1", Turns: []Turn{u("Can I change my delivery address?"), s("Yes, until the parcel leaves the depot."), u("And after that?"), s("Then the driver can leave it with a neighbour.")}},
		{ID: "sg-2", Turns: []Turn{u("¿Hacen envíos a Canarias?"), s("Sí, en cinco días hábiles.")}},
	}
	multiwoz := []Dialogue{
		{ID: "PMUL4398.json", Turns: []Turn{u("i need a place to dine in the center thats expensive"), s("I have several options for you; do you prefer African, Asian, or British food?"), u("Any sort of food would be fine, as long as it is a bit expensive.")}},
		{ID: "SNG0129.json", Turns: []Turn{u("I need a taxi to the station."), s("What time would you like to leave?")}},
	}
	mwozCols := Columns{Messages: "turns", Text: "utterance"}
	classLabels := Speakers{User: []string{"0"}, System: []string{"1"}}
	var ultra []Dialogue
	for i := range 8 {
		d := Dialogue{ID: fmt.Sprintf("u%d", i)}
		if i != 5 && i != 6 {
			d.Turns = []Turn{u(fmt.Sprintf("question %d", i))}
			if i%7 != 3 {
				d.Turns = append(d.Turns, s(fmt.Sprintf("answer %d", i)))
			}
		}
		ultra = append(ultra, d)
	}
	return []chatFixture{
		{file: "openai.jsonl", want: []Dialogue{
			{ID: "openai:1", Turns: []Turn{u("Where is my parcel? It was due on Monday."), s("Let me check: what is the tracking number?"), u("It is 4711, addressed to Zoë in Göteborg."), s("It arrives tomorrow. 🚚")}},
			{ID: "openai:2", Turns: []Turn{u("Is this box damaged?"), s("Yes, the corner is crushed; I have ordered a replacement."), u("Danke schön!")}},
			{ID: "openai:3", Turns: []Turn{u("日本への配送はできますか？"), s("はい、できます。")}},
		}, shape: "chat messages (role/content)",
			dropped: Dropped{Roles: map[string]int{"system": 2, "developer": 1, "tool": 1}, ToolCalls: 1, Empty: 1, Parts: 1}},
		{file: "sharegpt.json", want: sharegpt, shape: "ShareGPT conversations (from/value)", dropped: Dropped{Roles: map[string]int{"system": 1}}},
		{file: "sharegpt.json.gz", want: sharegpt, shape: "ShareGPT conversations (from/value)", dropped: Dropped{Roles: map[string]int{"system": 1}}},
		{file: "dailydialog.jsonl", cols: Columns{Messages: "dialog", FirstSpeaker: "user"}, want: []Dialogue{
			{ID: "dailydialog:1", Turns: []Turn{u("Say, Jim, how about going for a few beers after dinner?"), s("You know that is tempting but is really not good for our fitness."), u("What do you mean?")}},
			{ID: "dailydialog:2", Turns: []Turn{u("Can you do push-ups?"), u("Of course I can.")}},
		}, shape: `dialogue records, "dialog" a list of strings, speakers alternating from the user`, dropped: Dropped{Empty: 1}},
		{file: "multiwoz.jsonl", cols: mwozCols, speakers: classLabels, want: multiwoz,
			shape: `dialogue records, "turns" parallel lists (speaker/utterance)`},
		{file: "ultrachat.parquet", cols: Columns{Dialogue: "prompt_id"}, want: ultra, wantN: 3000, shape: "chat messages (role/content)",
			dropped: Dropped{Roles: map[string]int{"system": 2998}, Empty: 429}},
		{file: "dailydialog.parquet", cols: Columns{Messages: "dialog", FirstSpeaker: "user"}, want: []Dialogue{
			{ID: "dailydialog:0", Turns: []Turn{u("Say, Jim, how about going for a few beers after dinner?"), s("You know that is tempting but is really not good for our fitness."), u("What do you mean?")}},
			{ID: "dailydialog:1", Turns: []Turn{u("Can you do push-ups?"), u("Of course I can."), s("Great, show me.")}},
			{ID: "dailydialog:2", Turns: []Turn{u("Grüß Gott!"), s("Servus!")}},
		}, shape: `dialogue records, "dialog" a list of strings, speakers alternating from the user`, dropped: Dropped{Empty: 1}},
		{file: "multiwoz.parquet", cols: mwozCols, speakers: classLabels, want: multiwoz,
			shape: `dialogue records, "turns" parallel lists (speaker/utterance)`},
	}
}

// The files other tools wrote read as their writers' scripts say: roles mapped, system prompts, tool
// messages and calls, empty messages and image parts dropped and counted, the line separator and
// white space cleaned, ids of their own or made of the file's name and the record's place.
func TestChatFixtures(t *testing.T) {
	for _, c := range chatFixtures() {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "chat", c.file)
			var reps []FileReport
			s := FileSet{Paths: []string{path}, Columns: c.cols, Speakers: c.speakers}
			if err := s.Check(); err != nil {
				t.Fatalf("Check: %v", err)
			}
			got, err := ReadFiles(s, ReadOptions{FileRead: func(r FileReport) { reps = append(reps, r) }})
			if err != nil {
				t.Fatal(err)
			}
			corpus := baseNoExt(path)
			checkReadDialogues(t, corpus, got, false)
			n := len(c.want)
			if c.wantN > 0 {
				n = c.wantN
			}
			if len(got) != n {
				t.Fatalf("%d dialogues, want %d", len(got), n)
			}
			if !sameReadDialogues(got[:len(c.want)], c.want) {
				t.Errorf("read\n%+v\nwant\n%+v", got[:len(c.want)], c.want)
			}
			if len(reps) != 1 {
				t.Fatalf("%d reports", len(reps))
			}
			r := reps[0]
			if r.Shape != c.shape || r.Dialogues != n || fmt.Sprint(r.Dropped) != fmt.Sprint(c.dropped) {
				t.Errorf("report %+v\nwant shape %q, %d dialogues, dropped %+v", r, c.shape, n, c.dropped)
			}
		})
	}
}

func TestChatSummary(t *testing.T) {
	for _, c := range []struct {
		r    FileReport
		want string
	}{
		{FileReport{Shape: "chat messages (role/content)", Dialogues: 40, Dropped: Dropped{Roles: map[string]int{"system": 40}}},
			"chat messages (role/content), 1 system prompt dropped per dialogue"},
		{FileReport{Shape: "s", Dialogues: 3, Dropped: Dropped{Roles: map[string]int{"system": 2, "tool": 6}, ToolCalls: 1, Empty: 2, Parts: 1}, Skipped: 1},
			"s, 2 system prompts dropped, 2 tool messages dropped per dialogue, 1 tool call without text dropped, 2 empty messages dropped, 1 non-text content part dropped, 1 malformed records skipped"},
		{FileReport{Shape: "rows, one per turn", Dialogues: 5}, "rows, one per turn"},
	} {
		if got := c.r.Summary(); got != c.want {
			t.Errorf("%q\nwant %q", got, c.want)
		}
	}
}

// The roles map by ChatSpeakers, a list that is set replaces its default, and data.speakers.drop
// replaces the drop list; a label in no list is a malformed record naming the message and the role.
func TestChatRoles(t *testing.T) {
	const rec = `{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "Assistant ", "content": "Hello"}, {"role": "tool", "content": "{}"}]}` + "\n"
	path := putTestFile(t, t.TempDir(), "roles.jsonl", []byte(rec))
	for _, c := range []struct {
		name     string
		speakers Speakers
		turns    string // speaker:text, joined by |
		err      string
	}{
		{"defaults", Speakers{}, "user:Hi|system:Hello", ""},
		{"the system prompt kept as a system turn", Speakers{System: []string{"assistant", "system"}}, "system:Be brief.|user:Hi|system:Hello", ""},
		{"drop replaced", Speakers{Drop: []string{"system"}}, "", `line 1: message 3: role "tool" is neither a user speaker (user, human) nor a system speaker (assistant, gpt, bot, model, chatbot) nor dropped (system)`},
		{"user list set", Speakers{User: []string{"customer"}}, "", `line 1: message 1: role "user" is neither a user speaker (customer)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ds, err := ReadFiles(FileSet{Paths: []string{path}, Speakers: c.speakers}, ReadOptions{})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), path+": "+c.err) {
					t.Fatalf("error %v\nwant %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tr := range ds[0].Turns {
				got = append(got, string(tr.Speaker)+":"+tr.Text)
			}
			if strings.Join(got, "|") != c.turns {
				t.Errorf("turns %q, want %q", strings.Join(got, "|"), c.turns)
			}
		})
	}
	// A dropped label in a file of turns drops its rows.
	csvPath := putTestFile(t, t.TempDir(), "t.csv", []byte("dialogue_id,speaker,text\na,system,You are a bot.\na,user,hi\na,agent,hello\n"))
	var rep FileReport
	ds, err := ReadFiles(FileSet{Paths: []string{csvPath}, Speakers: Speakers{System: []string{"agent"}, Drop: []string{"system"}}},
		ReadOptions{FileRead: func(r FileReport) { rep = r }})
	if err != nil || len(ds) != 1 || len(ds[0].Turns) != 2 || ds[0].Turns[0].Text != "hi" || rep.Dropped.Roles["system"] != 1 {
		t.Errorf("csv with a drop list: %+v, %v, %+v", ds, err, rep)
	}
}

// A malformed record fails the read naming the file, the line or element and the problem; under SkipBad
// it is counted and skipped with its dialogue. Hostile sizes and depths stay within their bounds.
func TestChatMalformed(t *testing.T) {
	deep := strings.Repeat("[", 1_000_000)
	good := `{"messages": [{"role": "user", "content": "hi"}]}`
	sg := `{"id": "a", "conversations": [{"from": "human", "value": "hi"}]}`
	for _, c := range []struct {
		name, file, content string
		cols                Columns
		want                string
		kept                int // under SkipBad; -1: the file fails even so
	}{
		{"no role", "t.jsonl", good + "\n" + `{"messages": [{"content": "hi"}]}` + "\n" + good + "\n", Columns{}, `: line 2: message 0: no role`, 2},
		{"null role", "t.jsonl", `{"id": "x", "messages": [{"role": "user", "content": "a"}, {"role": null, "content": "hi"}]}`, Columns{}, `: line 1 (dialogue x): message 1: no role`, 0},
		{"role a number", "t.jsonl", `{"messages": [{"role": 1.5, "content": "hi"}]}`, Columns{}, `: line 1: message 0: role: 1.5 is not a string or an integer`, 0},
		{"role a list", "t.jsonl", good + "\n" + `{"messages": [{"role": ["user"], "content": "hi"}]}`, Columns{}, `: line 2: message 0: role: a JSON array, not a string`, 1},
		{"content a number", "t.jsonl", `{"messages": [{"role": "user", "content": 7}]}`, Columns{}, `: line 1: message 0: content: a JSON number, not a string`, 0},
		{"messages an object, first record", "t.jsonl", `{"messages": {"role": "user", "content": "hi"}}`, Columns{}, `: line 1: field "messages" is a JSON object, not a list of messages`, 0},
		{"messages an object, later record", "t.jsonl", good + "\n" + `{"messages": {"role": "user", "content": "hi"}}`, Columns{}, `: line 2: field "messages" is a JSON object where a list was expected`, 1},
		{"message a string", "t.jsonl", good + "\n" + `{"messages": ["hi"]}`, Columns{}, `: line 2: field "messages" is a JSON string where an object was expected`, 1},
		{"no messages", "t.jsonl", good + "\n" + `{"conversation": []}`, Columns{}, `: line 2: no field "messages" among the fields ("conversation")`, 1},
		{"neither layout", "t.jsonl", `{"dialog": ["hi"]}`, Columns{}, `: line 1: neither a chat record`, 0},
		{"strings without first_speaker", "t.jsonl", `{"dialog": ["hi"]}`, Columns{Messages: "dialog"}, `: line 1: field "dialog" is a list of strings: set data.columns.first_speaker`, 0},
		{"parallel lists of two lengths", "t.jsonl", `{"turns": {"speaker": ["user"], "text": ["a", "b"]}}`, Columns{Messages: "turns"}, `: line 1: field "turns": 1 speakers ("speaker") and 2 texts ("text")`, 0},
		{"named id missing", "t.jsonl", good, Columns{Dialogue: "conv_id"}, `: line 1: no id (field "conv_id", data.columns.dialogue)`, 0},
		{"not an object", "t.jsonl", `[1, 2]`, Columns{}, `: line 1: a JSON array, not a record (an object)`, 0},
		{"repeated id", "t.json", "[" + sg + ", " + sg + "]", Columns{}, `: record 1 (dialogue a): dialogue "a" of corpus t appears again`, 0}, // both records
		{"array cut short", "t.json", "[" + sg + `, {"id": "b", "conversations": [{"fr`, Columns{}, `: record 1: unreadable, so is the rest of the file: unexpected EOF`, 1},
		{"array not closed", "t.json", "[" + sg, Columns{}, `: record 1: the array is cut short`, 1},
		{"not an array", "t.json", sg, Columns{}, `: not a JSON array of dialogue records (it starts with {)`, -1},
		{"nested 10^6 deep, a line", "t.jsonl", `{"messages": ` + deep + "\n" + good + "\n", Columns{}, `: line 1: invalid character '[' exceeded max depth`, 1},
		{"nested 10^6 deep, an element", "t.json", "[" + sg + "," + deep, Columns{}, `: record 1: unreadable, so is the rest of the file: invalid character '[' exceeded max depth`, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := putTestFile(t, t.TempDir(), c.file, []byte(c.content))
			s := FileSet{Paths: []string{path}, Columns: c.cols}
			_, err := ReadFiles(s, ReadOptions{})
			if err == nil || !strings.Contains(err.Error(), path+c.want) {
				t.Fatalf("error %v\nwant %s%s", err, path, c.want)
			}
			log, logs := observedLogger()
			ds, err := ReadFiles(s, ReadOptions{SkipBad: true, Logger: log})
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

// An element of a JSON array over 64 MiB (here 100 MB) is refused once the decoder has read 64 MiB of it,
// holding about twice that at most.
func TestChatElementTooLong(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, `[{"id": "a", "conversations": [{"from": "human", "value": "hi"}]}, {"id": "b", "conversations": [{"from": "human", "value": "`)
	chunk := []byte(strings.Repeat("x", 1<<20))
	for range 100 {
		f.Write(chunk)
	}
	fmt.Fprint(f, `"}]}]`)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	before := heapAllocated()
	_, err = ReadFiles(FileSet{Paths: []string{path}}, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), path+": record 1: longer than 64 MiB") {
		t.Fatalf("error %v", err)
	}
	if got := heapAllocated() - before; got > 400<<20 {
		t.Errorf("allocated %d MiB reading a 100 MB element", got>>20)
	}
	ds, err := ReadFiles(FileSet{Paths: []string{path}}, ReadOptions{SkipBad: true})
	if err != nil || len(ds) != 1 {
		t.Errorf("SkipBad: %d dialogues, %v", len(ds), err)
	}
}

// heapAllocated is the bytes the process has allocated on the heap so far.
func heapAllocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// chatParquetMessage is a message of a dialogue-per-row Parquet file that parquet-go writes for the
// malformed cases (the well-formed fixtures are DuckDB's).
type chatParquetMessage struct {
	Role    *string `parquet:"role,optional"`
	Content *string `parquet:"content,optional"`
}

type chatParquetRow struct {
	ID       string               `parquet:"id"`
	Messages []chatParquetMessage `parquet:"messages,list"`
}

type chatParquetStrings struct {
	ID     string   `parquet:"id"`
	Dialog []string `parquet:"dialog,list"`
}

type chatParquetParallel struct {
	ID    string `parquet:"id"`
	Turns struct {
		Speaker []int32  `parquet:"speaker,list"`
		Text    []string `parquet:"text,list"`
	} `parquet:"turns"`
}

type chatParquetParts struct {
	ID       string `parquet:"id"`
	Messages []struct {
		Role    string   `parquet:"role"`
		Content []string `parquet:"content,list"`
	} `parquet:"messages,list"`
}

func TestChatParquetMalformed(t *testing.T) {
	str := func(s string) *string { return &s }
	msg := func(role, content *string) chatParquetMessage { return chatParquetMessage{role, content} }
	good := []chatParquetMessage{msg(str("user"), str("hi")), msg(str("assistant"), str("hello"))}
	for _, c := range []struct {
		name  string
		write func(path string)
		cols  Columns
		want  string
		kept  int
	}{
		{"null role", func(p string) {
			writeParquet(t, p, []chatParquetRow{{"a", good}, {"b", []chatParquetMessage{msg(str("user"), str("x")), msg(nil, str("y"))}}, {"c", good}}, 2)
		}, Columns{}, `: row index 1 (dialogue b): message 1: no role`, 2},
		{"unknown role", func(p string) {
			writeParquet(t, p, []chatParquetRow{{"a", good}, {"b", []chatParquetMessage{msg(str("narrator"), str("x"))}}}, 100)
		}, Columns{}, `: row index 1 (dialogue b): message 0: role "narrator" is neither a user speaker (user, human)`, 1},
		{"strings without first_speaker", func(p string) {
			writeParquet(t, p, []chatParquetStrings{{"a", []string{"hi"}}}, 100)
		}, Columns{Messages: "dialog"}, `: column "dialog": a list of strings: set data.columns.first_speaker`, -1},
		{"first_speaker on messages", func(p string) {
			writeParquet(t, p, []chatParquetRow{{"a", good}}, 100)
		}, Columns{FirstSpeaker: "user"}, `: column "messages": first_speaker is set, but the column is not a list of strings`, -1},
		{"parallel lists of two lengths", func(p string) {
			var r chatParquetParallel
			r.ID, r.Turns.Speaker, r.Turns.Text = "a", []int32{0, 1}, []string{"hi"}
			writeParquet(t, p, []chatParquetParallel{r}, 100)
		}, Columns{Messages: "turns"}, `: row index 0 (dialogue a): 2 speakers (turns.speaker.list.element) and 1 texts (turns.text.list.element)`, 0},
		{"content a list", func(p string) {
			var r chatParquetParts
			r.ID = "a"
			r.Messages = append(r.Messages, struct {
				Role    string   `parquet:"role"`
				Content []string `parquet:"content,list"`
			}{"user", []string{"hi"}})
			writeParquet(t, p, []chatParquetParts{r}, 100)
		}, Columns{}, `: column "messages": messages without a "content" field`, -1},
		{"a named list missing", func(p string) {
			writeParquet(t, p, []chatParquetRow{{"a", good}}, 100)
		}, Columns{Messages: "dialog"}, `: no dialogue column "dialogue_id"`, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.parquet")
			c.write(path)
			s := FileSet{Paths: []string{path}, Columns: c.cols, Speakers: Speakers{}}
			if c.name == "parallel lists of two lengths" {
				s.Speakers = Speakers{User: []string{"0"}, System: []string{"1"}}
			}
			_, err := ReadFiles(s, ReadOptions{})
			if err == nil || !strings.Contains(err.Error(), path+c.want) {
				t.Fatalf("error %v\nwant %s%s", err, path, c.want)
			}
			ds, err := ReadFiles(s, ReadOptions{SkipBad: true})
			switch {
			case c.kept < 0 && err == nil:
				t.Errorf("SkipBad: read %d dialogues of a file that cannot be read", len(ds))
			case c.kept >= 0 && (err != nil || len(ds) != c.kept):
				t.Errorf("SkipBad: %d dialogues (%v), want %d", len(ds), err, c.kept)
			}
		})
	}
}

// Hostile bytes as a chat JSONL, JSON or Parquet file give an error naming the file or dialogues that keep
// the readers' promises, never a panic; the seeds are the fixtures.
func FuzzChatRecords(f *testing.F) {
	names := []string{"f.jsonl", "f.json", "f.parquet"}
	for _, seed := range []struct {
		file string
		kind uint8
	}{{"openai.jsonl", 0}, {"dailydialog.jsonl", 0}, {"multiwoz.jsonl", 0}, {"sharegpt.json", 1}, {"dailydialog.parquet", 2}, {"multiwoz.parquet", 2}} {
		b, err := os.ReadFile(filepath.Join("testdata", "chat", seed.file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, seed.kind, seed.file == "multiwoz.jsonl" || seed.file == "multiwoz.parquet", seed.file == "dailydialog.jsonl" || seed.file == "dailydialog.parquet")
	}
	f.Fuzz(func(t *testing.T, data []byte, kind uint8, turns, dialog bool) {
		name := names[int(kind)%len(names)]
		path := putTestFile(t, t.TempDir(), name, data)
		s := FileSet{Paths: []string{path}}
		switch {
		case turns:
			s.Columns = Columns{Messages: "turns", Text: "utterance"}
			s.Speakers = Speakers{User: []string{"0"}, System: []string{"1"}}
		case dialog:
			s.Columns = Columns{Messages: "dialog", FirstSpeaker: "user"}
		}
		for _, skip := range []bool{false, true} {
			ds, err := ReadFiles(s, ReadOptions{SkipBad: skip})
			if err != nil && !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			for _, d := range ds { // a unified record keeps its own corpus
				checkReadDialogues(t, d.Corpus, []Dialogue{d}, false)
			}
		}
	})
}

// The mapping of dialogue records is part of the cache key: a drop list, a list of messages or a first
// speaker named builds anew; left unset, they leave the key of a file set as it was before them.
func TestChatCacheKey(t *testing.T) {
	path := filepath.Join("testdata", "chat", "openai.jsonl")
	base := FileSet{Paths: []string{path}}
	rec, err := filesKey(base)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(rec); strings.Contains(string(b), "Messages") || strings.Contains(string(b), "FirstSpeaker") || strings.Contains(string(b), "Drop") {
		t.Errorf("unset fields in the key: %s", b)
	}
	key := func(s FileSet) string {
		r, err := filesKey(s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	seen := map[string]string{key(base): "base"}
	for _, c := range []struct {
		name string
		s    FileSet
	}{
		{"drop list", FileSet{Paths: base.Paths, Speakers: Speakers{Drop: []string{"tool"}}}},
		{"messages named", FileSet{Paths: base.Paths, Columns: Columns{Messages: "messages"}}},
		{"first speaker", FileSet{Paths: base.Paths, Columns: Columns{Messages: "messages", FirstSpeaker: "user"}}},
	} {
		k := key(c.s)
		if prev, dup := seen[k]; dup {
			t.Errorf("%s: key equals that of %s", c.name, prev)
		}
		seen[k] = c.name
	}
	if key(FileSet{Paths: base.Paths, Speakers: Speakers{Drop: []string{" Tool"}}}) != key(FileSet{Paths: base.Paths, Speakers: Speakers{Drop: []string{"tool"}}}) {
		t.Error("a drop label's case and space changed the key")
	}
}

// Lines are decoded in batches once the layout is known: a file of many records, a too-long line among
// them and malformed ones read as one record at a time would, in order.
func TestChatBatches(t *testing.T) {
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", maxLineBytes+1) + "\n") // too long, before the layout is known
	for i := range 5000 {
		switch {
		case i == 4321:
			b.WriteString(`{"id": "bad", "messages": [{"role": "narrator", "content": "x"}]}` + "\n")
		default:
			fmt.Fprintf(&b, `{"id": "c%d", "messages": [{"role": "user", "content": "hello %d"}, {"role": "assistant", "content": "hi"}]}`+"\n", i, i)
		}
	}
	path := putTestFile(t, t.TempDir(), "many.jsonl", []byte(b.String()))
	_, err := ReadFiles(FileSet{Paths: []string{path}}, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), path+": line 1: longer than 64 MiB") {
		t.Fatalf("error %v", err)
	}
	ds, err := ReadFiles(FileSet{Paths: []string{path}}, ReadOptions{SkipBad: true})
	if err != nil || len(ds) != 4999 {
		t.Fatalf("%d dialogues, %v", len(ds), err)
	}
	for i, d := range ds {
		k := i
		if i >= 4321 {
			k++
		}
		if d.ID != fmt.Sprintf("c%d", k) || d.Turns[0].Text != fmt.Sprintf("hello %d", k) {
			t.Fatalf("dialogue %d is %+v", i, d)
		}
	}
	without := strings.SplitN(b.String(), "\n", 2)[1]
	path = putTestFile(t, t.TempDir(), "many.jsonl", []byte(without))
	if _, err := ReadFiles(FileSet{Paths: []string{path}}, ReadOptions{}); err == nil || !strings.Contains(err.Error(), path+`: line 4322 (dialogue bad): message 0: role "narrator"`) {
		t.Errorf("error %v", err)
	}
}

// A record's decoder is reused from record to record: nothing of one record shows in the next, whatever it
// lacks; and a list of strings after records with empty lists is told by its first message.
func TestChatRecordReuse(t *testing.T) {
	lines := []string{
		`{"id": "a", "domain": "Billing", "messages": [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two", "tool_calls": [{"id": 1}]}, {"role": "user", "content": "three"}]}`,
		`{"messages": [{"role": "assistant", "tool_calls": [{"id": 2}]}]}`,
		`{"id": "c", "messages": [{"role": "user"}]}`,
		`{"id": "d", "messages": []}`,
	}
	path := putTestFile(t, t.TempDir(), "reuse.jsonl", []byte(strings.Join(lines, "\n")))
	var rep FileReport
	ds, err := ReadFiles(FileSet{Paths: []string{path}}, ReadOptions{FileRead: func(r FileReport) { rep = r }})
	if err != nil {
		t.Fatal(err)
	}
	want := []Dialogue{
		{ID: "a", Domain: "billing", Turns: []Turn{{User, "one"}, {System, "two"}, {User, "three"}}},
		{ID: "reuse:2"}, {ID: "c"}, {ID: "d"},
	}
	if !sameReadDialogues(ds, want) || rep.Dropped.ToolCalls != 1 || rep.Dropped.Empty != 1 {
		t.Errorf("read %+v\nreport %+v", ds, rep)
	}
	strs := `{"dialog": []}` + "\n" + `{"dialog": null}` + "\n" + `{"dialog": ["hi", "hello"]}` + "\n"
	path = putTestFile(t, t.TempDir(), "dd.jsonl", []byte(strs))
	ds, err = ReadFiles(FileSet{Paths: []string{path}, Columns: Columns{Messages: "dialog", FirstSpeaker: "system"}}, ReadOptions{})
	if err != nil || len(ds) != 3 || len(ds[2].Turns) != 2 || ds[2].Turns[0].Speaker != System {
		t.Errorf("read %+v, %v", ds, err)
	}
	mixed := `{"messages": []}` + "\n" + `{"messages": null}` + "\n" + `{"messages": ["hi"]}` + "\n"
	path = putTestFile(t, t.TempDir(), "mixed.jsonl", []byte(mixed))
	if _, err := ReadFiles(FileSet{Paths: []string{path}}, ReadOptions{}); err == nil || !strings.Contains(err.Error(), path+": line 3: field \"messages\" is a list of strings: set data.columns.first_speaker") {
		t.Errorf("error %v", err)
	}
}
