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

// check prints data stats' table, a row per file named and a total, and fails on the first malformed row
// naming the file and line; --skip-bad reads on.
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
	example := filepath.Join("..", "..", "..", "examples", "own-dialogues", "support.csv")
	openai := filepath.Join("..", "..", "..", "datasets", "testdata", "chat", "openai.jsonl")
	sharegpt := filepath.Join("..", "..", "..", "datasets", "testdata", "chat", "sharegpt.json")
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		rows   [][]string // the table's rows, each cell as printed, from the first column
		shapes []string   // the lines after the table: each file's layout and what was dropped
		log    string     // in the log
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
		{"malformed", []string{"check", bad}, 1, nil, nil, bad + `: line 3 (dialogue b): speaker "robot" is neither a user speaker`},
		{"skip bad", []string{"check", "--skip-bad", bad}, 0, [][]string{
			{"file", "dialogues", "turns", "words", "turns/dialogue"}, {bad, "2", "2", "2", "1.0"}, {"total", "2", "2", "2", "1.0"},
		}, []string{bad + ": rows, one per turn, 1 malformed records skipped"}, "skipped malformed records"},
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
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if c.rows == nil {
				if out.Len() > 0 {
					t.Errorf("printed %q", out.String())
				}
				return
			}
			if len(lines) != len(c.rows)+len(c.shapes) {
				t.Fatalf("table:\n%s", out.String())
			}
			for i, want := range c.shapes {
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
