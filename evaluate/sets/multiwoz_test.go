package sets

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"convrep/internal/shared"
)

func TestReadMultiWOZActsTiny(t *testing.T) {
	s, err := ReadMultiWOZActs(materialise(t, "multiwoz"))
	if err != nil {
		t.Fatal(err)
	}
	sameExamples(t, "train", s.Train, nil)
	// File order (SNG02 before MUL01); "Booked ." has no acts and is no example; domains are dropped.
	sameExamples(t, "val", s.Val, []ActExample{
		ex("I need a train to cambridge .", "Where from ?", "|", "inform", "reqmore", "request"),
		ex("Hi , a cheap hotel please .", "The Lodge is cheap . Shall I book it ?", "|", "inform", "recommend"),
	})
	sameExamples(t, "test", s.Test, []ActExample{ex("Thanks , bye .", "Goodbye .", "|", "bye")})
	if want := []string{"bye", "inform", "recommend", "reqmore", "request"}; !reflect.DeepEqual(s.Labels, want) {
		t.Errorf("labels %q, want %q", s.Labels, want)
	}
	want := []string{
		"MultiWOZ 2.1: the train split (data/multiwoz/train.json.zip) is absent; Train is empty",
		"MultiWOZ 2.1: 2 dialogues; system turns with acts, val 2 of 3",
		"MultiWOZ 2.1: 1 dialogues; system turns with acts, test 1 of 1",
	}
	if !reflect.DeepEqual(s.Notes, want) {
		t.Errorf("notes %q, want %q", s.Notes, want)
	}
}

func TestReadMultiWOZResponsesTiny(t *testing.T) {
	dir := materialise(t, "multiwoz")
	r, err := ReadMultiWOZResponses(dir, "val")
	if err != nil {
		t.Fatal(err)
	}
	wantCtx := [][]string{
		{"I need a train to cambridge ."},
		{"I need a train to cambridge .", "Where from ?", "From london ."},
		{"Hi , a cheap hotel please ."},
	}
	wantResp := []string{"Where from ?", "Booked .", "The Lodge is cheap . Shall I book it ?"}
	if !reflect.DeepEqual(r.Contexts, wantCtx) || !reflect.DeepEqual(r.Responses, wantResp) {
		t.Errorf("contexts %q responses %q\nwant %q %q", r.Contexts, r.Responses, wantCtx, wantResp)
	}
	if r.Dataset != "multiwoz21" || !strings.HasSuffix(r.Source, filepath.Join("data", "multiwoz", "val.json.zip")+"#val.json") {
		t.Errorf("dataset %q source %q", r.Dataset, r.Source)
	}
}

func TestReadMultiWOZErrors(t *testing.T) {
	dir := materialise(t, "multiwoz")
	_, err := ReadMultiWOZResponses(dir, "dev")
	wantErr(t, err, `split "dev"`, "train, val, test")
	_, err = ReadMultiWOZResponses(dir, "train")
	wantErr(t, err, "train.json.zip")

	for _, tc := range []struct {
		name, json string
		parts      []string
	}{
		{"act key", `{"A1": {"log": [{"text": "hi", "dialog_act": {}}, {"text": "hello", "dialog_act": {"Inform": []}}]}}`,
			[]string{"val.json.zip: member val.json", "dialogue 0 (A1)", "turn 1", `dialog_act key "Inform"`}},
		{"no text", `{"A1": {"log": [{"text": "hi"}]}, "B2": {"log": [{"dialog_act": {}}]}}`,
			[]string{"member val.json", "dialogue 1 (B2)", "turn 0: no text"}},
		{"not an object", `[1, 2]`, []string{"member val.json", "want an object of dialogues"}},
		{"truncated", `{"A1": {"log": [{"text": "hi"}`, []string{"member val.json", "dialogue 0 (A1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := materialise(t, "multiwoz")
			member := filepath.Join(t.TempDir(), "val.json.zip.d")
			if err := os.MkdirAll(member, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(member, "val.json"), []byte(tc.json), 0o644); err != nil {
				t.Fatal(err)
			}
			writeZipOf(t, member, filepath.Join(dir, "data", "multiwoz", "val.json.zip"))
			_, err := ReadMultiWOZActs(dir)
			wantErr(t, err, tc.parts...)
		})
	}
}

// TestReadMultiWOZ reads the shipped val (999 dialogues) and test (1000) files.
func TestReadMultiWOZ(t *testing.T) {
	dir := shared.MustPath(t, "data", "eval", "multiwoz21")
	start := time.Now()
	s, err := ReadMultiWOZActs(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("acts read in %v; train %d, val %d, test %d examples; %d labels %q", time.Since(start), len(s.Train), len(s.Val), len(s.Test), len(s.Labels), s.Labels)
	for _, n := range s.Notes {
		t.Log(n)
	}
	if len(s.Train) != 0 || len(s.Val) != 7286 || len(s.Test) != 7293 {
		t.Errorf("examples %d/%d/%d, want 0/7286/7293", len(s.Train), len(s.Val), len(s.Test))
	}
	// TOD-BERT's 13 system act types of MultiWOZ.
	want := []string{"book", "bye", "greet", "inform", "nobook", "nooffer", "offerbook", "offerbooked", "recommend", "reqmore", "request", "select", "welcome"}
	if !reflect.DeepEqual(s.Labels, want) {
		t.Errorf("labels %q, want %q", s.Labels, want)
	}
	for _, n := range []string{
		"MultiWOZ 2.1: 999 dialogues; system turns with acts, val 7,286 of 7,365",
		"MultiWOZ 2.1: 1000 dialogues; system turns with acts, test 7,293 of 7,372",
	} {
		if !slices.Contains(s.Notes, n) {
			t.Errorf("no note %q", n)
		}
	}
	checkActSet(t, s)
	if _, err := s.FewShot(10, 0); err == nil {
		t.Error("FewShot on the absent train split gave no error")
	}

	for _, sp := range []struct {
		split string
		n     int
		first string
	}{{"val", 7365, "I need to book a hotel in the east that has 4 stars ."}, {"test", 7372, "I would like a taxi from Saint John 's college to Pizza Hut Fen Ditton ."}} {
		start := time.Now()
		r, err := ReadMultiWOZResponses(dir, sp.split)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("responses %s: %d rows, read in %v", sp.split, len(r.Responses), time.Since(start))
		if len(r.Responses) != sp.n || len(r.Contexts) != sp.n {
			t.Errorf("%s: %d responses, %d contexts; want %d", sp.split, len(r.Responses), len(r.Contexts), sp.n)
		}
		if len(r.Contexts) > 0 && (len(r.Contexts[0]) != 1 || r.Contexts[0][0] != sp.first) {
			t.Errorf("%s: first context %q, want [%q] (file order)", sp.split, r.Contexts[0], sp.first)
		}
		for i, c := range r.Contexts {
			if len(c)%2 != 1 || r.Responses[i] == "" {
				t.Fatalf("%s row %d: %d context turns, response %q; want an odd number (user first) and a response", sp.split, i, len(c), r.Responses[i])
			}
		}
	}
}
