package datasets

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestJSONLRoundTrip(t *testing.T) {
	ds := []Dialogue{
		{ID: "a/1", Corpus: "sgd", Domain: "hotels", Turns: []Turn{{User, "<b> & \"q\" “x” \u2028"}, {System, "ok"}}},
		{ID: "2", Corpus: "kvret", Turns: nil},
	}
	var b bytes.Buffer
	if err := WriteJSONL(&b, ds); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != 2 || !strings.Contains(b.String(), "<b> & ") {
		t.Errorf("%d lines, HTML escaped? %s", n, b.String())
	}
	dir := t.TempDir()
	for _, name := range []string{"d.jsonl", "d.jsonl.gz"} {
		data := b.Bytes()
		if strings.HasSuffix(name, ".gz") {
			data = gzipTestBytes(t, data)
		}
		got, err := ReadJSONL(putTestFile(t, dir, name, data))
		if err != nil {
			t.Fatal(err)
		}
		if !sameReadDialogues(got, ds) {
			t.Errorf("%s: read back %+v", name, got)
		}
	}
}

// The shared WOZ corpus survives writing and reading back unchanged.
func TestJSONLRoundTripShared(t *testing.T) {
	ds := readSharedCorpus(t, "woz2")
	var b bytes.Buffer
	if err := WriteJSONL(&b, ds); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSONL(putTestFile(t, t.TempDir(), "woz.jsonl", b.Bytes()))
	if err != nil || !sameReadDialogues(got, ds) {
		t.Errorf("round trip of %d dialogues: %d back, %v", len(ds), len(got), err)
	}
}

func TestReadJSONLMalformed(t *testing.T) {
	good := `{"id": "1", "corpus": "c", "turns": [{"speaker": "user", "text": "hi"}]}`
	for _, c := range []struct {
		name, content, want string
	}{
		{"not JSON", good + "\n\n{oops\n", "line 3"},
		{"no id", `{"corpus": "c", "turns": []}`, "line 1: missing id or corpus"},
		{"bad speaker", good + "\n" + `{"id": "2", "corpus": "c", "turns": [{"speaker": "bot", "text": "x"}]}`, `line 2: dialogue 2 turn 0: speaker "bot"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := putTestFile(t, t.TempDir(), "d.jsonl", []byte(c.content))
			_, err := ReadJSONL(path)
			if err == nil || !strings.Contains(err.Error(), filepath.Base(path)) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want the file and %q", err, c.want)
			}
		})
	}
	if _, err := ReadJSONL(filepath.Join(t.TempDir(), "absent.jsonl")); err == nil {
		t.Error("a missing file read without error")
	}
}
