package datasets

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func metaLWOZLine(id, domain string, turns ...string) string {
	q := make([]string, len(turns))
	for i, s := range turns {
		q[i] = fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf(`{"id": %q, "user_id": "u", "bot_id": "b", "domain": %q, "task_id": "t", "turns": [%s]}`, id, domain, strings.Join(q, ", "))
}

const metaLWOZTestZip = "data_ptm/metalwoz/metalwoz-test-v1.zip"

// metaLWOZNested writes the test release's layout: an archive of archives of dialogues/*.txt.
func metaLWOZNested(t *testing.T, root string, inner ...zipMember) {
	putTestFile(t, root, metaLWOZTestZip, zipTestBytes(t,
		zipMember{Name: "ATTRIBUTION.md", Data: []byte("x")},
		zipMember{Name: "dstc8_a.zip", Data: zipTestBytes(t, inner...)},
		zipMember{Name: "dstc8_b.zip", Data: zipTestBytes(t, zipMember{Name: "dialogues/hotel.txt", Data: []byte(metaLWOZLine("B1", "hotel", "s", "u"))})},
		zipMember{Name: "test_spec.jsonl", Data: []byte("{}")}))
}

func TestMetaLWOZMalformed(t *testing.T) {
	lines := func(ls ...string) func(*testing.T, string) {
		return func(t *testing.T, root string) {
			metaLWOZNested(t, root, zipMember{Name: "tasks.txt", Data: []byte("not dialogues")},
				zipMember{Name: "dialogues/TOURISM.txt", Data: []byte(strings.Join(ls, "\n"))})
		}
	}
	good := metaLWOZLine("A1", "TOURISM", "Hello how may I help you?", "Hi")
	runMalformedCases(t, "metalwoz", []malformedCase{
		{name: "bad JSON", setup: lines(good, `{"id": "A2", "turns": [`, ""),
			want: []string{"metalwoz-test-v1.zip!dstc8_a.zip!dialogues/TOURISM.txt", "line 2", "unexpected end of JSON"}, kept: 2, skipped: 1},
		{name: "wrong type", setup: lines(`{"id": "A3", "turns": ["a", 2]}`, good),
			want: []string{"dstc8_a.zip!dialogues/TOURISM.txt", "line 1 (dialogue A3)", "cannot unmarshal number"}, kept: 2, skipped: 1},
		{name: "no turns", setup: lines(good, "", `{"id": "A4"}`),
			want: []string{"dialogues/TOURISM.txt", "line 3 (dialogue A4)", "missing turns"}, kept: 2, skipped: 1},
		{name: "broken inner archive", setup: func(t *testing.T, root string) {
			putTestFile(t, root, metaLWOZTestZip, zipTestBytes(t, zipMember{Name: "dstc8_a.zip", Data: []byte("PK not a zip")}))
		}, want: []string{"metalwoz-test-v1.zip!dstc8_a.zip", "not a readable zip archive"}, skipped: -1},
		{name: "no dialogues", setup: func(t *testing.T, root string) {
			putTestFile(t, root, metaLWOZTestZip, zipTestBytes(t, zipMember{Name: "ATTRIBUTION.md", Data: []byte("x")}))
		}, want: []string{"metalwoz-test-v1.zip", "no dialogues/*.txt"}, skipped: -1},
	})
}

// Even turns are the bot's; IDs carry the archive holding the dialogues file; the training release's
// dialogues/*.txt at the top of its archive read alike.
func TestMetaLWOZLayout(t *testing.T) {
	root := t.TempDir()
	metaLWOZNested(t, root, zipMember{Name: "dialogues/TOURISM.txt", Data: []byte(metaLWOZLine("A1", "TOURISM", "bot", "user", "", "user again") + "\r\n")})
	putTestFile(t, root, "data_ptm/metalwoz/metalwoz-v1.zip", zipTestBytes(t,
		zipMember{Name: "dialogues/PIZZA.txt", Data: []byte(`{"id": "P1", "turns": ["b", "u"]}`)}))
	ds, err := ReadCorpus("metalwoz", root, ReadOptions{MergeSameSpeaker: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []Dialogue{
		{ID: "dstc8_a/A1", Corpus: "metalwoz", Domain: "tourism", Turns: []Turn{{System, "bot"}, {User, "user user again"}}},
		{ID: "dstc8_b/B1", Corpus: "metalwoz", Domain: "hotel", Turns: []Turn{{System, "s"}, {User, "u"}}},
		{ID: "metalwoz-v1/P1", Corpus: "metalwoz", Domain: "pizza", Turns: []Turn{{System, "b"}, {User, "u"}}},
	}
	if !sameReadDialogues(ds, want) {
		t.Errorf("read %+v\nwant %+v", ds, want)
	}
}

func FuzzMetaLWOZ(f *testing.F) {
	f.Add([]byte(metaLWOZLine("A1", "TOURISM", "hi", "hello", "") + "\n\n" + metaLWOZLine("A2", "", "x") + "\n"))
	f.Add([]byte("{\"id\": \"x\", \"turns\": null}\n[]\n{\"id\": 1}\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRecordParser(t, "metalwoz", data, func(src *source, r *bytes.Reader) ([]Dialogue, error) {
			return parseMetaLWOZ(src, "dstc8_a", "TOURISM", r)
		})
	})
}
