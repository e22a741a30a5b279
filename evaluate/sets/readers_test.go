package sets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convrep/internal/shared"

	"convrep/evaluate"
)

func TestReadCLINC150(t *testing.T) {
	c, err := ReadCLINC150(shared.MustPath(t, "data", "eval", "clinc150", "data", "data_full.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name   string
		split  evaluate.Split
		n      int
		labels int
	}{
		{"train", c.Train, 15000, 150}, {"val", c.Val, 3000, 150}, {"test", c.Test, 4500, 150},
		{"oos_train", c.OOSTrain, 100, 1}, {"oos_val", c.OOSVal, 100, 1}, {"oos_test", c.OOSTest, 1000, 1},
	} {
		if len(s.split) != s.n || len(s.split.Labels()) != s.labels {
			t.Errorf("%s: %d rows, %d labels; want %d, %d", s.name, len(s.split), len(s.split.Labels()), s.n, s.labels)
		}
	}
	if c.OOSTest[0].Label != evaluate.OOSLabel {
		t.Errorf("oos_test label %q, want %q", c.OOSTest[0].Label, evaluate.OOSLabel)
	}
	if err := evaluate.CheckQueryLabels(c.Train, c.Test); err != nil {
		t.Error(err)
	}
}

func TestReadSNIPS(t *testing.T) {
	for _, tc := range []struct {
		file string
		n    int
	}{{"snips_train.json", 13784}, {"snips_test.json", 700}} {
		s, err := ReadSNIPS(shared.MustPath(t, "data", "eval", "snips", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != tc.n || len(s.Labels()) != 7 {
			t.Errorf("%s: %d rows, %d labels; want %d, 7", tc.file, len(s), len(s.Labels()), tc.n)
		}
	}
}

func TestReadAmazonQA(t *testing.T) {
	pairs, err := ReadAmazonQA(shared.MustPath(t, "data", "eval", "amazonqa", "qa_Video_Games.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 13307 {
		t.Fatalf("%d pairs, want 13307", len(pairs))
	}
	if pairs[0].Question != "Will it work with Windows 8?" || !strings.HasPrefix(pairs[0].Answer, "You should look here:") {
		t.Errorf("first pair %+v", pairs[0])
	}
	if pairs[1].Answer != "Yes" {
		t.Errorf("second answer %q, want Yes", pairs[1].Answer)
	}
}

// writeTemp writes content to a file named name in a fresh temporary folder.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadUserFile(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                evaluate.Split
		errHas              []string // substrings the error must hold
	}{
		{"csv", "a.csv", "id,utterance,intent\n1,\"hi, there\",greet\n2,bye,leave\n", evaluate.Split{{Text: "hi, there", Label: "greet"}, {Text: "bye", Label: "leave"}}, nil},
		{"csv with BOM", "a.csv", "\ufeffutterance,intent\nhi,greet\n", evaluate.Split{{Text: "hi", Label: "greet"}}, nil},
		{"jsonl", "a.jsonl", "{\"utterance\": \"hi\", \"intent\": \"greet\"}\n\n{\"utterance\": \"bye\", \"intent\": 3}\n", evaluate.Split{{Text: "hi", Label: "greet"}, {Text: "bye", Label: "3"}}, nil},
		{"csv label column missing", "a.csv", "utterance,label\nhi,greet\n", nil, []string{"a.csv", "line 1", `label column "intent" is missing`}},
		{"csv text column missing", "a.csv", "text,intent\nhi,greet\n", nil, []string{"a.csv", `text column "utterance" is missing`}},
		{"csv empty file", "a.csv", "", nil, []string{"a.csv", "empty"}},
		{"csv header only", "a.csv", "utterance,intent\n", nil, []string{"a.csv", "no data rows"}},
		{"csv ragged row", "a.csv", "utterance,intent\nhi,greet\nbye\n", nil, []string{"a.csv", "line 3"}},
		{"csv empty label", "a.csv", "utterance,intent\nhi,greet\nbye,\n", nil, []string{"a.csv", "line 3", "empty label"}},
		{"jsonl empty file", "a.jsonl", "\n\n", nil, []string{"a.jsonl", "empty"}},
		{"jsonl malformed line", "a.jsonl", "{\"utterance\": \"hi\", \"intent\": \"g\"}\n{\"utterance\": \n", nil, []string{"a.jsonl", "line 2", "not a JSON object"}},
		{"jsonl label field missing", "a.jsonl", "{\"utterance\": \"hi\"}\n", nil, []string{"a.jsonl", "line 1", `field "intent" is missing`}},
		{"jsonl text not a string", "a.jsonl", "{\"utterance\": [1], \"intent\": \"g\"}\n", nil, []string{"line 1", `field "utterance"`}},
	} {
		got, err := ReadUserFile(writeTemp(t, tc.file, tc.content), "utterance", "intent")
		if tc.errHas != nil {
			if err == nil {
				t.Errorf("%s: no error, want one holding %q", tc.name, tc.errHas)
				continue
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%s: error %q does not hold %q", tc.name, err, s)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: row %d got %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	if _, err := ReadUserFile(filepath.Join(t.TempDir(), "none.csv"), "a", "b"); err == nil || !strings.Contains(err.Error(), "none.csv") {
		t.Errorf("missing file: error %v, want one naming the file", err)
	}
}

func TestReadUpstreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		read                func(string) error
		errHas              string
	}{
		{"clinc split missing", "c.json", `{"train": [["a", "b"]]}`, func(p string) error { _, err := ReadCLINC150(p); return err }, `split "val" is missing`},
		{"clinc bad row", "c.json", `{"train": [["a"]]}`, func(p string) error { _, err := ReadCLINC150(p); return err }, "train row 0"},
		{"snips empty file", "s.json", "", func(p string) error { _, err := ReadSNIPS(p); return err }, "empty"},
		{"snips empty list", "s.json", "[]", func(p string) error { _, err := ReadSNIPS(p); return err }, "no examples"},
		{"amazonqa bad literal", "q.json", "{'question': 'a', 'answer': 'b'}\n{'question': 'a', 'answer': 'b}\n", func(p string) error { _, err := ReadAmazonQA(p); return err }, "q.json:2: column"},
		{"amazonqa answer missing", "q.json", "{'question': 'a'}\n", func(p string) error { _, err := ReadAmazonQA(p); return err }, `q.json:1: key "answer"`},
		{"amazonqa not a dict", "q.json", "['a']\n", func(p string) error { _, err := ReadAmazonQA(p); return err }, "q.json:1: want a dict"},
		{"amazonqa empty", "q.json", "", func(p string) error { _, err := ReadAmazonQA(p); return err }, "empty"},
	} {
		p := writeTemp(t, tc.file, tc.content)
		err := tc.read(p)
		if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), tc.file) {
			t.Errorf("%s: error %v, want one naming %s and holding %q", tc.name, err, tc.file, tc.errHas)
		}
	}
}

// Without --label-column, a two-column file's other column, or the one column named like a label, is the
// label; otherwise the error lists the columns.
func TestLabelColumn(t *testing.T) {
	for _, tc := range []struct {
		name, file, content, want, errHas string
	}{
		{"two csv columns", "a.csv", "utterance,domain\nhi,x\n", "domain", ""},
		{"two csv columns, text second", "a.csv", "gold,utterance\nx,hi\n", "gold", ""},
		{"named intent", "a.csv", "id,utterance,Intent\n1,hi,x\n", "Intent", ""},
		{"named category", "a.jsonl", "{\"utterance\": \"hi\", \"id\": 1, \"category\": \"x\"}\n", "category", ""},
		{"two json fields", "a.jsonl", "\n{\"utterance\": \"hi\", \"y\": \"x\"}\n", "y", ""},
		{"ambiguous", "a.csv", "id,utterance,label,intent\n1,hi,x,y\n", "", "one of: id, utterance, label, intent"},
		{"no label-like column", "a.csv", "id,utterance,domain\n1,hi,x\n", "", "Pass --label-column, one of: id, utterance, domain"},
		{"empty", "a.jsonl", "\n", "", "empty"},
	} {
		got, err := LabelColumn(writeTemp(t, tc.file, tc.content), "utterance")
		if tc.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("%s: got %q, %v; want an error holding %q", tc.name, got, err, tc.errHas)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
