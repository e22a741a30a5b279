package datasets

import (
	"bytes"
	"fmt"
	"testing"
)

func wozRecord(idx int, system, user string) string {
	return fmt.Sprintf(`{"dialogue_idx": %d, "dialogue": [{"turn_label": [], "asr": [], "system_transcript": %q, "turn_idx": 0,
		"belief_state": [], "transcript": %q, "system_acts": []}]}`, idx, system, user)
}

func TestWOZMalformed(t *testing.T) {
	file := func(content string) func(*testing.T, string) {
		return func(t *testing.T, root string) {
			putTestFile(t, root, "data/woz/woz_train_en.json", []byte("["+wozRecord(0, "", "hi")+"]"))
			putTestFile(t, root, "data/woz/woz_validate_en.json", []byte(content))
		}
	}
	runMalformedCases(t, "woz2", []malformedCase{
		{name: "no transcript", setup: file(`[{"dialogue_idx": 4, "dialogue": [{"system_transcript": ""}]}]`),
			want: []string{"woz_validate_en.json", "record 0 (dialogue 4)", "turn 0", "missing system_transcript or transcript"}, kept: 1, skipped: 1},
		{name: "no index", setup: file(`[{"dialogue": []}, ` + wozRecord(1, "", "x") + `]`),
			want: []string{"woz_validate_en.json", "record 0:", "missing dialogue_idx"}, kept: 2, skipped: 1},
		{name: "wrong type", setup: file(`[{"dialogue_idx": "4", "dialogue": []}]`),
			want: []string{"woz_validate_en.json", "record 0", "cannot unmarshal string"}, kept: 1, skipped: 1},
		{name: "truncated", setup: file("[" + wozRecord(1, "", "x") + ", " + wozRecord(2, "", "y")[:30]),
			want: []string{"woz_validate_en.json", "record 1", "unexpected EOF"}, kept: 2, skipped: 1},
	})
}

// Each WOZ turn holds the system's words and then the user's reply; an empty system transcript is dropped.
func TestWOZTurnOrder(t *testing.T) {
	in := `[{"dialogue_idx": 0, "dialogue": [{"system_transcript": "", "transcript": "u1"}, {"system_transcript": "s1", "transcript": "u2"},
		{"system_transcript": "s2 ", "transcript": " "}]}]`
	ds, err := parseWOZ(newSource("woz2", "woz_test_en.json", ReadOptions{}), "test", bytes.NewReader([]byte(in)))
	if err != nil {
		t.Fatal(err)
	}
	want := []Dialogue{{ID: "test/0", Corpus: "woz2", Domain: "restaurant", Turns: []Turn{{User, "u1"}, {System, "s1"}, {User, "u2"}, {System, "s2"}}}}
	if !sameReadDialogues(ds, want) {
		t.Errorf("read %+v, want %+v", ds, want)
	}
}

func FuzzWOZ(f *testing.F) {
	f.Add([]byte("[" + wozRecord(0, "", "hi") + "," + wozRecord(1, "hello", "bye") + "]"))
	f.Add([]byte(`[{"dialogue_idx": -1, "dialogue": [null]}, {"dialogue_idx": 1e3}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRecordParser(t, "woz2", data, func(src *source, r *bytes.Reader) ([]Dialogue, error) { return parseWOZ(src, "train", r) })
	})
}
