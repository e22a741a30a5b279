package datasets

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

func sgdRecord(id, speaker, utterance string) string {
	return fmt.Sprintf(`{"dialogue_id": %q, "services": ["Hotels_2"], "turns": [{"speaker": %q, "utterance": %q, "frames": []}]}`,
		id, speaker, utterance)
}

func TestSGDMalformed(t *testing.T) {
	good := sgdRecord("1_00000", "USER", "hello")
	file := func(split, content string) func(*testing.T, string) {
		return func(t *testing.T, root string) {
			putTestFile(t, root, split+"/dialogues_001.json", []byte("["+sgdRecord("9_00000", "USER", "fine")+"]"))
			putTestFile(t, root, split+"/dialogues_002.json", []byte(content))
		}
	}
	// A gzip file cut in the middle of its third record: records 0 and 1 are read, 2 is lost.
	truncated := func(t *testing.T, root string) {
		rng := rand.New(rand.NewSource(1))
		long := make([]byte, 20000)
		for i := range long {
			long[i] = byte('a' + rng.Intn(26))
		}
		gz := gzipTestBytes(t, []byte("["+sgdRecord("1_00000", "USER", "a")+","+sgdRecord("1_00001", "USER", "b")+","+
			sgdRecord("1_00002", "USER", string(long))+"]"))
		putTestFile(t, root, "train/dialogues_003.json.gz", gz[:len(gz)/2])
	}
	runMalformedCases(t, "sgd", []malformedCase{
		{name: "bad JSON", setup: file("dev", "["+good+`, {"dialogue_id": ]`),
			want: []string{"dev/dialogues_002.json", "record 1", "unreadable", "invalid character"}, kept: 2, skipped: 1},
		{name: "missing turns", setup: file("train", `[{"dialogue_id": "1_00007", "services": []}, `+good+`]`),
			want: []string{"train/dialogues_002.json", "record 0 (dialogue 1_00007)", "missing turns"}, kept: 2, skipped: 1},
		{name: "missing utterance", setup: file("train", `[{"dialogue_id": "1_00007", "turns": [{"speaker": "USER"}]}]`),
			want: []string{"record 0 (dialogue 1_00007)", "turn 0", "missing speaker or utterance"}, kept: 1, skipped: 1},
		// The decoder has read the whole record before the type error: the records after it are read.
		{name: "wrong type", setup: file("test", "["+good+`, {"dialogue_id": "1_00008", "turns": [{"speaker": "USER", "utterance": 5}]}, `+
			sgdRecord("1_00009", "SYSTEM", "after")+"]"),
			want: []string{"test/dialogues_002.json", "record 1 (dialogue 1_00008)", "cannot unmarshal number"}, kept: 3, skipped: 1},
		{name: "unknown speaker", setup: file("train", "["+sgdRecord("1_00009", "BOT", "hi")+"]"),
			want: []string{"record 0 (dialogue 1_00009)", `speaker "BOT" is neither USER nor SYSTEM`}, kept: 1, skipped: 1},
		{name: "truncated gzip", setup: truncated,
			want: []string{"train/dialogues_003.json.gz", "record 2", "unexpected EOF"}, kept: 2, skipped: 1},
		{name: "data after the array", setup: file("train", "["+good+"] []"),
			want: []string{"dialogues_002.json", "end of file", "data after the array"}, kept: 2, skipped: 1},
		{name: "not an array", setup: file("train", `{"dialogue_id": "1"}`),
			want: []string{"dialogues_002.json", "not a JSON array"}, skipped: -1},
		{name: "not gzip", setup: func(t *testing.T, root string) { putTestFile(t, root, "dev/dialogues_001.json.gz", []byte("[]")) },
			want: []string{"dialogues_001.json.gz", "not gzip"}, skipped: -1},
	})
}

func TestSGDLayout(t *testing.T) {
	root := t.TempDir()
	putTestFile(t, root, "test/dialogues_001.json", []byte("["+sgdRecord("1_00000", "USER", "c")+"]"))
	putTestFile(t, root, "train/dialogues_002.json.gz", gzipTestBytes(t, []byte("["+sgdRecord("2_00000", "USER", "b")+"]")))
	putTestFile(t, root, "train/dialogues_001.json", []byte("["+sgdRecord("1_00000", "SYSTEM", "  a \n  b ")+"]"))
	putTestFile(t, root, "train/dialogues_001.json.gz", gzipTestBytes(t, []byte("[]"))) // the plain file wins
	putTestFile(t, root, "train/schema.json", []byte("not read"))
	ds, err := ReadCorpus("sgd", root, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, d.ID+" "+d.Domain+" "+string(d.Turns[0].Speaker)+":"+d.Turns[0].Text)
	}
	want := "train/1_00000 hotels system:a b|train/2_00000 hotels user:b|test/1_00000 hotels user:c"
	if strings.Join(got, "|") != want {
		t.Errorf("read %q\nwant %q", strings.Join(got, "|"), want)
	}
}

func TestSGDDomain(t *testing.T) {
	for in, want := range map[string]string{
		"":                                     "",
		"Restaurants_1":                        "restaurants",
		"Restaurants_1,Hotels_2,Restaurants_2": "restaurants,hotels",
		"Weird":                                "weird",
	} {
		var services []string
		if in != "" {
			services = strings.Split(in, ",")
		}
		if got := sgdDomain(services); got != want {
			t.Errorf("sgdDomain(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzSGD(f *testing.F) {
	f.Add([]byte("[" + sgdRecord("1_00000", "USER", "hello") + "," + sgdRecord("1_00001", "SYSTEM", "a\tb") + "]"))
	f.Add([]byte(`[{"dialogue_id": "x", "turns": [{"speaker": "user", "utterance": ""}, null]}, 3, null]`))
	f.Add([]byte(`[{"dialogue_id": ""}]`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRecordParser(t, "sgd", data, func(src *source, r *bytes.Reader) ([]Dialogue, error) { return parseSGD(src, "train", r) })
	})
}
