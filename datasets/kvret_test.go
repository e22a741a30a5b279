package datasets

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func kvretRecord(uuid, who, utterance string) string {
	return fmt.Sprintf(`{"dialogue": [{"turn": %q, "data": {"end_dialogue": false, "utterance": %q}}],
		"scenario": {"kb": {"items": null}, "task": {"intent": "Weather"}, "uuid": %q}}`, who, utterance, uuid)
}

func kvretZipWith(t *testing.T, root string, members ...zipMember) {
	putTestFile(t, root, kvretZips[0], zipTestBytes(t, members...))
}

func TestKVRETMalformed(t *testing.T) {
	good := kvretRecord("u-1", "driver", "what's the weather")
	train := func(content string) func(*testing.T, string) {
		return func(t *testing.T, root string) {
			kvretZipWith(t, root, zipMember{Name: "kvret_dev_public.json", Data: []byte("[" + kvretRecord("u-0", "assistant", "ok") + "]")},
				zipMember{Name: "kvret_train_public.json", Data: []byte(content)})
		}
	}
	broken := func(t *testing.T, root string) {
		z := zipTestBytes(t, zipMember{Name: "kvret_test_public.json", Data: []byte("[" + kvretRecord("u-2", "driver", "MARKER") + "]"), Store: true})
		putTestFile(t, root, kvretZips[0], corruptStoredMember(t, z, "MARKER", "MARKEX"))
	}
	runMalformedCases(t, "kvret", []malformedCase{
		{name: "no uuid", setup: train(`[{"dialogue": [], "scenario": {"task": {"intent": "x"}}}, ` + good + `]`),
			want: []string{"original_data.zip!kvret_train_public.json", "record 0:", "missing scenario.uuid"}, kept: 2, skipped: 1},
		{name: "no utterance", setup: train(`[{"dialogue": [{"turn": "driver", "data": {}}], "scenario": {"uuid": "u-9"}}]`),
			want: []string{"kvret_train_public.json", "record 0 (dialogue u-9)", "turn 0", "missing turn or data.utterance"}, kept: 1, skipped: 1},
		{name: "unknown speaker", setup: train("[" + good + "," + kvretRecord("u-3", "navigator", "go") + "]"),
			want: []string{"record 1 (dialogue u-3)", `speaker "navigator" is neither driver nor assistant`}, kept: 2, skipped: 1},
		{name: "wrong type", setup: train(`[{"dialogue": "none", "scenario": {"uuid": "u-4"}}]`),
			want: []string{"record 0 (dialogue u-4)", "cannot unmarshal string"}, kept: 1, skipped: 1},
		{name: "bad JSON", setup: train("[" + good + ", {]"),
			want: []string{"kvret_train_public.json", "record 1", "invalid character"}, kept: 2, skipped: 1},
		{name: "broken member", setup: broken,
			want: []string{"original_data.zip!kvret_test_public.json", "end of file", "checksum"}, kept: 1, skipped: 1},
		{name: "no member", setup: func(t *testing.T, root string) {
			kvretZipWith(t, root, zipMember{Name: "kvret_entities.json", Data: []byte("{}")})
		}, want: []string{"original_data.zip", "none of"}, skipped: -1},
	})
}

// Members are read train, dev, test whatever their order in the archive, from a folder inside it too.
func TestKVRETOrder(t *testing.T) {
	root := t.TempDir()
	kvretZipWith(t, root,
		zipMember{Name: "kvret/kvret_test_public.json", Data: []byte("[" + kvretRecord("c", "driver", "3") + "]")},
		zipMember{Name: "kvret/kvret_train_public.json", Data: []byte("[" + kvretRecord("a", "driver", "1") + "]")},
		zipMember{Name: "kvret/kvret_dev_public.json", Data: []byte("[" + kvretRecord("b", "driver", "2") + "]")})
	ds, err := ReadCorpus("kvret", root, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.ID+":"+d.Domain)
	}
	if strings.Join(ids, " ") != "a:weather b:weather c:weather" {
		t.Errorf("read %v", ids)
	}
}

// The README's split sizes, member by member.
func TestKVRETSharedSplits(t *testing.T) {
	files, err := Files("kvret", sharedCorpusRoot(t, "kvret"))
	if err != nil {
		t.Fatal(err)
	}
	for member, want := range map[string]int{"kvret_train_public.json": 2425, "kvret_dev_public.json": 302, "kvret_test_public.json": 304} {
		ds, err := readZipMembers("kvret", files[0], []string{member}, ReadOptions{}, parseKVRET)
		if err != nil || len(ds) != want {
			t.Errorf("%s: %d dialogues (%v), want %d", member, len(ds), err, want)
		}
	}
}

func FuzzKVRET(f *testing.F) {
	f.Add([]byte("[" + kvretRecord("u-1", "driver", "hi") + "," + kvretRecord("u-2", "assistant", " ") + "]"))
	f.Add([]byte(`[{"dialogue": [{"turn": "driver", "data": null}], "scenario": {"uuid": "x", "task": null}}, {"scenario": 1}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRecordParser(t, "kvret", data, func(src *source, r *bytes.Reader) ([]Dialogue, error) { return parseKVRET(src, r) })
	})
}
