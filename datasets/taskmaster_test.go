package datasets

import (
	"bytes"
	"fmt"
	"testing"
)

func tmRecord(id, vertical, speaker, text string) string {
	return fmt.Sprintf(`{"conversation_id": %q, "vertical": %q, "scenario": "s", "instructions": null,
		"utterances": [{"index": 0, "speaker": %q, "text": %q, "segments": []}]}`, id, vertical, speaker, text)
}

func TestTaskmasterMalformed(t *testing.T) {
	file := func(content string) func(*testing.T, string) {
		return func(t *testing.T, root string) {
			putTestFile(t, root, "TM-4-2024/data/data_00.json.gz", gzipTestBytes(t, []byte("["+tmRecord("d0", "Coffee", "user", "hi")+"]")))
			putTestFile(t, root, "TM-4-2024/data/data_01.json.gz", gzipTestBytes(t, []byte(content)))
		}
	}
	runMalformedCases(t, "taskmaster", []malformedCase{
		{name: "unknown speaker", setup: file("[" + tmRecord("d1", "Coffee", "barista", "hi") + "]"),
			want: []string{"TM-4-2024/data/data_01.json.gz", "record 0 (dialogue d1)", "utterance 0", `speaker "barista" is neither user nor assistant`}, kept: 1, skipped: 1},
		{name: "no text", setup: file(`[{"conversation_id": "d2", "utterances": [{"speaker": "user"}]}]`),
			want: []string{"data_01.json.gz", "record 0 (dialogue d2)", "missing speaker or text"}, kept: 1, skipped: 1},
		{name: "no id", setup: file(`[{"utterances": []}]`),
			want: []string{"data_01.json.gz", "record 0:", "missing conversation_id"}, kept: 1, skipped: 1},
		{name: "wrong type", setup: file(`[{"conversation_id": "d3", "utterances": {}}]`),
			want: []string{"record 0 (dialogue d3)", "cannot unmarshal object"}, kept: 1, skipped: 1},
	})
}

// TM-1 and TM-2 read in their upstream layout when present, with their domains; TM-1's sample.json is not
// a dialogue file.
func TestTaskmasterReleases(t *testing.T) {
	root := t.TempDir()
	putTestFile(t, root, "TM-1-2019/sample.json", []byte(`{"conversation_id": "sample"}`))
	putTestFile(t, root, "TM-1-2019/self-dialogs.json", []byte(`[{"conversationId": "dlg-1", "instructionId": "restaurant-table-2",
		"utterances": [{"index": 0, "speaker": "USER", "text": "a table"}, {"index": 1, "speaker": "ASSISTANT", "text": "sure"}]}]`))
	putTestFile(t, root, "TM-2-2020/data/food-ordering.json", []byte("["+tmRecord("dlg-2", "", "USER", "food")+"]"))
	putTestFile(t, root, "TM-4-2024/data/data_00.json.gz", gzipTestBytes(t, []byte("["+tmRecord("dlg-4", "Coffee", "user", "coffee")+"]")))
	files, err := Files("taskmaster", root)
	if err != nil || len(files) != 3 {
		t.Fatalf("Files: %v, %v", files, err)
	}
	ds, err := ReadCorpus("taskmaster", root, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Dialogue{
		{ID: "dlg-1", Corpus: "taskmaster", Domain: "restaurant-table", Turns: []Turn{{User, "a table"}, {System, "sure"}}},
		{ID: "dlg-2", Corpus: "taskmaster", Domain: "food-ordering", Turns: []Turn{{User, "food"}}},
		{ID: "dlg-4", Corpus: "taskmaster", Domain: "coffee", Turns: []Turn{{User, "coffee"}}},
	}
	if !sameReadDialogues(ds, want) {
		t.Errorf("read %+v\nwant %+v", ds, want)
	}
}

func FuzzTaskmaster(f *testing.F) {
	f.Add([]byte("[" + tmRecord("d1", "Coffee", "user", "hi") + "," + tmRecord("d2", "", "ASSISTANT", "") + "]"))
	f.Add([]byte(`[{"conversationId": "c", "instructionId": "x-1", "utterances": [null]}, {"conversation_id": null}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRecordParser(t, "taskmaster", data, func(src *source, r *bytes.Reader) ([]Dialogue, error) { return parseTaskmaster(src, "", r) })
	})
}
