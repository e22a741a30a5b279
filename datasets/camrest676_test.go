package datasets

import (
	"bytes"
	"fmt"
	"testing"
)

func camRestRecord(id int, usr, sys string) string {
	return fmt.Sprintf(`{"dial": [{"turn": 0, "usr": {"transcript": %q, "slu": []}, "sys": {"sent": %q, "DA": []}}],
		"goal": {}, "finished": true, "dialogue_id": %d}`, usr, sys, id)
}

func TestCamRestMalformed(t *testing.T) {
	file := func(content string) func(*testing.T, string) {
		return func(t *testing.T, root string) { putTestFile(t, root, camRestBase+".json", []byte(content)) }
	}
	good := camRestRecord(0, "find food", "what kind?")
	runMalformedCases(t, "camrest676", []malformedCase{
		{name: "no sys", setup: file("[" + good + `, {"dialogue_id": 1, "dial": [{"usr": {"transcript": "x"}}]}]`),
			want: []string{"CamRest676.json", "record 1 (dialogue 1)", "turn 0", "missing usr.transcript or sys.sent"}, kept: 1, skipped: 1},
		{name: "no dial", setup: file(`[{"dialogue_id": 5}, ` + good + `]`),
			want: []string{"CamRest676.json", "record 0 (dialogue 5)", "missing dial"}, kept: 1, skipped: 1},
		{name: "wrong type", setup: file(`[{"dialogue_id": 5, "dial": [{"usr": {"transcript": ["x"]}, "sys": {"sent": "y"}}]}]`),
			want: []string{"record 0 (dialogue 5)", "cannot unmarshal array"}, kept: 0, skipped: 1},
		{name: "empty file", setup: file(""), want: []string{"CamRest676.json", "not JSON"}, skipped: -1},
	})
}

func TestCamRestTurnOrder(t *testing.T) {
	ds, err := parseCamRest(newSource("camrest676", "c.json", ReadOptions{}), bytes.NewReader([]byte("["+camRestRecord(3, "u", "s")+"]")))
	want := []Dialogue{{ID: "3", Corpus: "camrest676", Domain: "restaurant", Turns: []Turn{{User, "u"}, {System, "s"}}}}
	if err != nil || !sameReadDialogues(ds, want) {
		t.Errorf("read %+v (%v), want %+v", ds, err, want)
	}
}

func FuzzCamRest(f *testing.F) {
	f.Add([]byte("[" + camRestRecord(0, "hi", "hello") + "," + camRestRecord(1, "", "") + "]"))
	f.Add([]byte(`[{"dialogue_id": 1, "dial": [{"usr": null, "sys": {}}]}, "x"]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRecordParser(t, "camrest676", data, func(src *source, r *bytes.Reader) ([]Dialogue, error) { return parseCamRest(src, r) })
	})
}
