package experiment

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"convrep/datasets"
)

// data.files are read from the experiment file's folder (an absolute path as it is), with [data.columns]
// and [data.speakers]; they may replace data.corpora, and then data.root is not needed.
func TestDataFiles(t *testing.T) {
	dir := t.TempDir()
	body := strings.Replace(validExperiment, "[data]\nroot = \"data\"\ncorpora = [\"woz2\"]\n",
		`[data]
files = ["own/chats.jsonl", "../support.csv", "/abs/hf_export"]

[data.columns]
dialogue = "conversation_id"
text = "message"

[data.speakers]
user = ["customer"]
`, 1)
	e, err := Load(writeExperimentIn(t, dir, body), nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := e.Data.FileSet()
	want := &datasets.FileSet{
		Paths:    []string{filepath.Join(dir, "own", "chats.jsonl"), filepath.Join(filepath.Dir(dir), "support.csv"), "/abs/hf_export"},
		Columns:  datasets.Columns{Dialogue: "conversation_id", Text: "message"},
		Speakers: datasets.Speakers{User: []string{"customer"}},
	}
	if fs == nil || !slices.Equal(fs.Paths, want.Paths) || fs.Columns != want.Columns || !slices.Equal(fs.Speakers.User, want.Speakers.User) || fs.Speakers.System != nil {
		t.Errorf("file set %+v, want %+v", fs, want)
	}
	// The digest holds the files as written, not where the experiment file lies.
	other, err := Load(writeExperimentIn(t, t.TempDir(), body), nil)
	if err != nil {
		t.Fatal(err)
	}
	if other.Digest() != e.Digest() {
		t.Error("the same experiment in another folder has another digest")
	}
	// Without files, nothing of them reaches the digest's JSON (the digests of earlier runs stay).
	base, err := Load(writeExperiment(t, validExperiment), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(base.Data); strings.Contains(string(b), "files") || strings.Contains(string(b), "columns") || strings.Contains(string(b), "speakers") {
		t.Errorf("data config JSON %s names the files' keys", b)
	}
	if base.Data.FileSet() != nil {
		t.Error("a file set without files")
	}
	both, err := Load(writeExperiment(t, validExperiment), []string{`data.files=["x.csv"]`})
	if err != nil || both.Digest() == base.Digest() || len(both.Data.Corpora) != 1 {
		t.Errorf("corpora and a file: %v, digest %s (without the file %s)", err, both.Digest(), base.Digest())
	}
}

func TestDataFilesRejects(t *testing.T) {
	noCorpora := strings.Replace(validExperiment, `corpora = ["woz2"]`, "", 1)
	for _, c := range []struct {
		name string
		body string
		set  []string
		want string
	}{
		{"neither corpora nor files", noCorpora, nil, "data: give data.corpora, data.files or both"},
		{"corpora without a root", strings.Replace(validExperiment, `root = "data"`, "", 1), nil, "data.root is required"},
		{"a file twice", noCorpora, []string{`data.files=["a.csv", "a.csv"]`}, "data.files: "},
		{"an empty path", noCorpora, []string{`data.files=["a.csv", ""]`}, "data.files: file 2 is an empty path"},
		{"a speaker on both sides", noCorpora, []string{`data.files=["a.csv"]`, `data.speakers.user=["bot"]`, `data.speakers.system=["Bot"]`}, `data.files: speaker "bot" is both`},
		{"columns without files", validExperiment, []string{"data.columns.text=message"}, "[data.columns] and [data.speakers] say how data.files are read"},
		{"unknown column key", noCorpora, []string{`data.files=["a.csv"]`, "data.columns.utterance=message"}, `unknown key "data.columns.utterance"`},
		{"files not a list", noCorpora, []string{`data.files="a.csv"`}, "data.files"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeExperiment(t, c.body), c.set)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	// Files alone need no root.
	if _, err := Load(writeExperiment(t, strings.Replace(noCorpora, `root = "data"`, "", 1)), []string{`data.files=["a.csv"]`}); err != nil {
		t.Errorf("files without corpora or root: %v", err)
	}
}
