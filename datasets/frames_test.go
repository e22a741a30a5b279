package datasets

import (
	"bytes"
	"fmt"
	"testing"
)

func framesRecord(id, author, text string) string {
	return fmt.Sprintf(`{"user_id": "U1", "id": %q, "labels": {}, "turns": [{"author": %q, "text": %q, "labels": {}, "timestamp": 1.0}]}`,
		id, author, text)
}

func TestFramesMalformed(t *testing.T) {
	good := framesRecord("f-1", "user", "book a trip")
	frames := func(content string) func(*testing.T, string) {
		return func(t *testing.T, root string) {
			putTestFile(t, root, framesZip, zipTestBytes(t, zipMember{Name: "LICENSE.pdf", Data: []byte("%PDF")},
				zipMember{Name: "frames.json", Data: []byte(content)}))
		}
	}
	broken := func(t *testing.T, root string) {
		z := zipTestBytes(t, zipMember{Name: "frames.json", Data: []byte("[" + good + ", " + framesRecord("f-2", "wizard", "MARKER") + "]"), Store: true})
		putTestFile(t, root, framesZip, corruptStoredMember(t, z, `"f-2"`, `"f-2'`))
	}
	runMalformedCases(t, "frames", []malformedCase{
		{name: "unknown author", setup: frames("[" + good + "," + framesRecord("f-2", "bot", "hi") + "]"),
			want: []string{"original_data.zip!frames.json", "record 1 (dialogue f-2)", `speaker "bot" is neither user nor wizard`}, kept: 1, skipped: 1},
		{name: "no text", setup: frames(`[{"id": "f-3", "turns": [{"author": "user"}]}, ` + good + `]`),
			want: []string{"record 0 (dialogue f-3)", "turn 0", "missing author or text"}, kept: 1, skipped: 1},
		{name: "no id", setup: frames(`[{"turns": []}]`),
			want: []string{"frames.json", "record 0:", "missing id"}, kept: 0, skipped: 1},
		{name: "wrong type", setup: frames(`[{"id": 7, "turns": []}]`),
			want: []string{"record 0", "cannot unmarshal number"}, kept: 0, skipped: 1},
		{name: "broken member", setup: broken,
			want: []string{"original_data.zip!frames.json", "record 1", "invalid character"}, kept: 1, skipped: 1},
		{name: "no frames.json", setup: func(t *testing.T, root string) {
			putTestFile(t, root, framesZip, zipTestBytes(t, zipMember{Name: "LICENSE.pdf", Data: []byte("%PDF")}))
		}, want: []string{"original_data.zip", "none of [frames.json]"}, skipped: -1},
	})
}

func FuzzFrames(f *testing.F) {
	f.Add([]byte("[" + framesRecord("f-1", "user", "hi") + "," + framesRecord("f-2", "wizard", "hello\n") + "]"))
	f.Add([]byte(`[{"id": "x", "turns": [null, {"author": "WIZARD", "text": ""}]}, []]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRecordParser(t, "frames", data, func(src *source, r *bytes.Reader) ([]Dialogue, error) { return parseFrames(src, r) })
	})
}
