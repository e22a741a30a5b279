package datacmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"convrep/datasets"
)

// check prints data stats' table, a row per file named and a total, each file's layout, and every malformed
// row (the first 100, then a count) naming the file and line; it fails on them unless --skip-bad skips them.
// Given an experiment file, it reads its data.files with its mapping.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	calls := write("calls.tsv", "call\twho\tsaid\n1\tcaller\thello my wifi is down\n1\toperator\thave you restarted the router today\n2\tcaller\tthanks\n")
	chats := write("chats.jsonl", `{"id":"a","corpus":"chats","turns":[{"speaker":"user","text":"hi"},{"speaker":"user","text":"anyone there"}]}`+"\n")
	bad := write("bad.csv", "dialogue_id,speaker,text\na,user,hi\nb,robot,beep\nc,system,ok\n")
	robot := `speaker "robot" is neither a user speaker (user, customer, client, human, usr) nor a system speaker (system, agent, assistant, bot, sys)`
	// support.csv has the example's faults: a dialogue whose rows come back, a speaker in no list, a turn
	// column called turn_no that is not named.
	support := write("support.csv", "conversation_id,turn_no,role,message\n"+
		"T-1,1,customer,my parcel is late\nT-1,2,agent,let me look at the tracking\n"+
		"T-2,1,customer,I was charged twice\nT-2,2,agnet,I will refund the second payment\n"+
		"T-3,1,customer,can I change my address\nT-3,2,agent,yes in your account settings\n"+
		"T-1,3,customer,it says delivered but it is not here\n")
	supportFlags := []string{"--dialogue-column", "conversation_id", "--speaker-column", "role", "--text-column", "message"}
	supportBad := []string{
		support + ": line 2 (dialogue T-1): dialogue \"T-1\" of corpus support comes back after other dialogues (a CSV, TSV or Parquet dialogue's rows must be consecutive, and an id is unique over the files): skipped whole, here and wherever else it appears",
		support + `: line 5 (dialogue T-2): speaker "agnet" is neither a user speaker (user, customer, client, human, usr) nor a system speaker (system, agent, assistant, bot, sys)`,
		support + ": line 8 (dialogue T-1): dialogue \"T-1\" of corpus support comes back after other dialogues (a CSV, TSV or Parquet dialogue's rows must be consecutive, and an id is unique over the files): skipped whole, here and wherever else it appears",
	}
	turnNotice := "notice: " + support + `: column "turn_no" looks like a turn order, but data.columns.turn is not set and there is no column "turn", so each dialogue's rows are taken in file order; set [data.columns] turn = "turn_no" (data check --turn-column turn_no) to order them by it`
	// An experiment in another folder, its file named relative to that folder, with the mapping in TOML.
	expDir := filepath.Join(dir, "exp")
	os.MkdirAll(expDir, 0o755)
	csv, _ := os.ReadFile(support)
	os.WriteFile(filepath.Join(expDir, "support.csv"), csv, 0o644)
	expFile := filepath.Join(expDir, "own.toml")
	os.WriteFile(expFile, []byte(`name = "own"
output_dir = "runs/own"
[model]
backbone = "models/mini"
[data]
files = ["support.csv"]
merge_same_speaker = true
skip_bad = true
min_words = 0
[data.columns]
dialogue = "conversation_id"
turn = "turn_no"
speaker = "role"
text = "message"
[data.speakers]
system = ["agent", "agnet"]
[objective]
name = "dse"
[train]
batch_size = 2
lr = 1e-5
head_lr = 1e-3
`), 0o644)
	expSupport := filepath.Join(expDir, "support.csv")
	var rows strings.Builder
	for i := range 150 {
		fmt.Fprintf(&rows, "d%d,robot,beep\n", i)
	}
	many := write("many.csv", "dialogue_id,speaker,text\n"+rows.String())
	example := filepath.Join("..", "..", "..", "examples", "own-dialogues", "support.csv")
	openai := filepath.Join("..", "..", "..", "datasets", "testdata", "chat", "openai.jsonl")
	sharegpt := filepath.Join("..", "..", "..", "datasets", "testdata", "chat", "sharegpt.json")
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		rows  [][]string // the table's rows, each cell as printed, from the first column (none printed: nil)
		after []string   // the lines after the table: each file's layout, the malformed records, the notices
		log   string     // in the log
	}{
		{"two formats", []string{"check", "--dialogue-column", "call", "--speaker-column", "who", "--text-column", "said",
			"--user", "caller", "--system", "operator", "--merge-speakers", calls, chats},
			0, [][]string{
				{"file", "dialogues", "turns", "words", "turns/dialogue"},
				{calls, "2", "3", "12", "1.5"},
				{chats, "1", "1", "3", "1.0"},
				{"total", "3", "4", "15", "1.3"},
			}, []string{calls + ": rows, one per turn", chats + ": convrep's unified dialogues (id/corpus/turns)"}, ""},
		{"chat records", []string{"check", "--merge-speakers", openai, sharegpt},
			0, [][]string{
				{"file", "dialogues", "turns", "words", "turns/dialogue"},
				{openai, "3", "9", "47", "3.0"},
				{sharegpt, "2", "6", "34", "3.0"},
				{"total", "5", "15", "81", "3.0"},
			}, []string{
				openai + ": chat messages (role/content), 1 developer prompt dropped, 2 system prompts dropped, 1 tool message dropped, 1 tool call without text dropped, 1 empty message dropped, 1 non-text content part dropped",
				sharegpt + ": ShareGPT conversations (from/value), 1 system prompt dropped",
			}, "dropped messages"},
		{"pairs", []string{"check", "--dialogue-column", "conversation_id", "--speaker-column", "role", "--text-column", "message",
			"--domain-column", "topic", "--merge-speakers", "--pairs", "dse", example},
			0, [][]string{
				{"file", "dialogues", "turns", "words", "turns/dialogue", "pairs"},
				{example, "41", "269", "2531", "6.6", "198"},
				{"total", "41", "269", "2531", "6.6", "198"},
			}, []string{example + ": rows, one per turn"}, ""},
		{"malformed", []string{"check", bad}, 1, nil, []string{"1 malformed records:", "  " + bad + ": line 3 (dialogue b): " + robot},
			"1 malformed records (listed above); a run stops at the first: fix them, or pass --skip-bad to skip each with its dialogue"},
		{"skip bad", []string{"check", "--skip-bad", bad}, 0, [][]string{
			{"file", "dialogues", "turns", "words", "turns/dialogue"}, {bad, "2", "2", "2", "1.0"}, {"total", "2", "2", "2", "1.0"},
		}, []string{bad + ": rows, one per turn, 1 malformed records skipped", "1 malformed records, each skipped with its dialogue:",
			"  " + bad + ": line 3 (dialogue b): " + robot}, "skipped malformed records"},
		{"scattered dialogue and a turn column", append(append([]string{"check"}, supportFlags...), support), 1, nil,
			append(append([]string{"3 malformed records:"}, indent(supportBad)...), turnNotice), "3 malformed records (listed above)"},
		{"scattered dialogue skipped whole", append(append([]string{"check", "--skip-bad"}, supportFlags...), support), 0, [][]string{
			{"file", "dialogues", "turns", "words", "turns/dialogue"}, {support, "1", "2", "10", "2.0"}, {"total", "1", "2", "10", "2.0"},
		}, append(append([]string{support + ": rows, one per turn, 3 malformed records skipped", "3 malformed records, each skipped with its dialogue:"},
			indent(supportBad)...), turnNotice), "skipped malformed records"},
		{"the first 100 listed", []string{"check", many}, 1, nil, nil, "150 malformed records (listed above)"},
		{"experiment", []string{"check", expFile}, 0, [][]string{
			{"file", "dialogues", "turns", "words", "turns/dialogue", "pairs"}, {expSupport, "2", "4", "20", "2.0", "2"}, {"total", "2", "4", "20", "2.0", "2"},
		}, []string{expSupport + ": rows, one per turn, 2 malformed records skipped", "2 malformed records, each skipped with its dialogue:",
			"  " + expSupport + ": line 2 (dialogue T-1): dialogue \"T-1\" of corpus support comes back after other dialogues (a CSV, TSV or Parquet dialogue's rows must be consecutive, and an id is unique over the files): skipped whole, here and wherever else it appears",
			"  " + expSupport + ": line 8 (dialogue T-1): dialogue \"T-1\" of corpus support comes back after other dialogues (a CSV, TSV or Parquet dialogue's rows must be consecutive, and an id is unique over the files): skipped whole, here and wherever else it appears",
		}, ""},
		{"experiment without skip_bad", []string{"check", "--set", "data.speakers.system=[\"agent\"]", "--set", "data.skip_bad=false", expFile}, 1, nil, []string{"3 malformed records:",
			"  " + expSupport + ": line 2 (dialogue T-1): dialogue \"T-1\" of corpus support comes back after other dialogues (a CSV, TSV or Parquet dialogue's rows must be consecutive, and an id is unique over the files): skipped whole, here and wherever else it appears",
			"  " + expSupport + `: line 5 (dialogue T-2): speaker "agnet" is neither a user speaker (user, customer, client, human, usr) nor a system speaker (agent)`,
			"  " + expSupport + ": line 8 (dialogue T-1): dialogue \"T-1\" of corpus support comes back after other dialogues (a CSV, TSV or Parquet dialogue's rows must be consecutive, and an id is unique over the files): skipped whole, here and wherever else it appears"},
			"3 malformed records (listed above); a run stops at the first: fix them, or set data.skip_bad = true in " + expFile},
		{"experiment with a mapping flag", []string{"check", "--speaker-column", "role", expFile}, 1, nil, nil, "--speaker-column: " + expFile + " says how its files are read"},
		{"experiment and a file", []string{"check", expFile, support}, 1, nil, nil, "name one EXPERIMENT.toml alone, or files"},
		{"set without experiment", []string{"check", "--set", "data.skip_bad=true", support}, 1, nil, nil, "--set applies to an EXPERIMENT.toml"},
		{"no file", []string{"check"}, 1, nil, nil, "name at least one FILE"},
		{"unknown format", []string{"check", filepath.Join(dir)}, 1, nil, nil, "holds no .parquet file"},
		{"bad variant", []string{"check", "--pairs", "dse9", calls}, 1, nil, nil, `unknown variant "dse9"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			var out, errOut bytes.Buffer
			code := run(c.args, &out, &errOut, zap.New(core))
			var logged strings.Builder
			for _, e := range logs.All() {
				logged.WriteString(e.Message + " ")
				for k, v := range e.ContextMap() {
					logged.WriteString(k + "=" + toString(v) + " ")
				}
			}
			if code != c.code || !strings.Contains(logged.String(), c.log) {
				t.Fatalf("exit %d, log %q, stderr %q; want %d and %q", code, logged.String(), errOut.String(), c.code, c.log)
			}
			if strings.Contains(logged.String(), "skipped a malformed record") {
				t.Errorf("the log lists malformed records that the output lists")
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if out.Len() == 0 {
				lines = nil
			}
			if c.name == "the first 100 listed" {
				if len(lines) != 102 || lines[0] != "150 malformed records:" || lines[101] != "  … and 50 more, not listed" ||
					lines[1] != "  "+many+": line 2 (dialogue d0): "+robot || lines[100] != "  "+many+": line 101 (dialogue d99): "+robot {
					t.Errorf("printed %d lines:\n%s", len(lines), out.String())
				}
				return
			}
			if len(lines) != len(c.rows)+len(c.after) {
				t.Fatalf("printed:\n%s", out.String())
			}
			for i, want := range c.after {
				if got := lines[len(c.rows)+i]; got != want {
					t.Errorf("line %d = %q\nwant %q", len(c.rows)+i, got, want)
				}
			}
			for i, want := range c.rows {
				if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("row %d = %q, want %q", i, got, want)
				}
			}
		})
	}
}

// indent is lines, each indented as check lists them.
func indent(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = "  " + l
	}
	return out
}

func toString(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	return fmt.Sprint(v)
}

// convert --files writes files of one's own, any layout, as the unified JSONL, which reads back the same.
func TestConvertFiles(t *testing.T) {
	fixtures := filepath.Join("..", "..", "..", "datasets", "testdata", "chat")
	out := filepath.Join(t.TempDir(), "out", "dialogues.jsonl")
	var stdout, stderr bytes.Buffer
	args := []string{"convert", "--out", out, "--files", filepath.Join(fixtures, "dailydialog.parquet") + "," + filepath.Join(fixtures, "sharegpt.json"),
		"--messages-column", "", "--first-speaker", "user"}
	// dailydialog.parquet needs its list named: without, it is taken for a file of turns.
	core, logs := observer.New(zapcore.DebugLevel)
	if code := run(args, &stdout, &stderr, zap.New(core)); code != 1 || !strings.Contains(fmt.Sprint(logs.All()), `dailydialog.parquet: no dialogue column "dialogue_id" among the columns (n, dialog, act)`) {
		t.Fatalf("exit %d, log %v", code, logs.All())
	}
	args = []string{"convert", "--out", out, "--files", filepath.Join(fixtures, "dailydialog.parquet"), "--messages-column", "dialog", "--first-speaker", "user"}
	if code := run(args, &stdout, &stderr, zap.NewNop()); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	got, err := datasets.ReadJSONL(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := datasets.ReadFiles(datasets.FileSet{Paths: []string{filepath.Join(fixtures, "dailydialog.parquet")},
		Columns: datasets.Columns{Messages: "dialog", FirstSpeaker: "user"}}, datasets.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 3 || got[1].ID != "dailydialog:1" {
		t.Errorf("converted %+v\nwant %+v", got, want)
	}
}
