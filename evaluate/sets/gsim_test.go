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

// gsimTinyWant is the set the hand-made GSIM layout gives, whichever source each part comes from.
var gsimTinyWant = ActSet{
	Train: []ActExample{
		ex("buy 2 tickets .", "which movie and when ?", "|", "request"),
		ex("buy 2 tickets .", "which movie and when ?", "zootopia at 6 pm .", "zootopia at 6 pm , booked .", "|", "confirm", "notify_success"),
		ex("find me a cheap place", "how about cafe x ?", "|", "offer"), // sim-R train, from data.zip
	},
	Val: []ActExample{
		ex("a movie tonight", "how about up ?", "|", "offer"),
		ex("a table for 2", "what time ?", "|", "request"),
	},
	Test: []ActExample{
		ex("tickets please", "sorry , no . what day ?", "|", "negate", "request"),
		ex("book it", "sorry , it is full .", "|", "notify_failure"), // sim-R test, from data.zip
	},
	Labels: []string{"confirm", "negate", "notify_failure", "notify_success", "offer", "request"},
}

func TestReadGSIMTiny(t *testing.T) {
	for _, tc := range []struct {
		name    string
		remove  []string // Google files removed from the layout, so that their part comes from data.zip
		sources []string // expected source notes, in order
	}{
		{"files first", nil, []string{
			"GSIM sim-M train: 1 dialogues from sim-M/train.json",
			"GSIM sim-R train: 1 dialogues from data_ptm/m2m/data.zip (sim-R/train.json absent)",
			"GSIM sim-M dev: 1 dialogues from sim-M/dev.json",
			"GSIM sim-R dev: 1 dialogues from sim-R/dev.json",
			"GSIM sim-M test: 1 dialogues from sim-M/test.json",
			"GSIM sim-R test: 1 dialogues from data_ptm/m2m/data.zip (sim-R/test.json absent)",
		}},
		{"archive only", []string{"sim-M/train.json", "sim-M/dev.json", "sim-M/test.json", "sim-R/dev.json"}, []string{
			"GSIM sim-M train: 1 dialogues from data_ptm/m2m/data.zip (sim-M/train.json absent)",
			"GSIM sim-R train: 1 dialogues from data_ptm/m2m/data.zip (sim-R/train.json absent)",
			"GSIM sim-M dev: 1 dialogues from data_ptm/m2m/data.zip (sim-M/dev.json absent)",
			"GSIM sim-R dev: 1 dialogues from data_ptm/m2m/data.zip (sim-R/dev.json absent)",
			"GSIM sim-M test: 1 dialogues from data_ptm/m2m/data.zip (sim-M/test.json absent)",
			"GSIM sim-R test: 1 dialogues from data_ptm/m2m/data.zip (sim-R/test.json absent)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := materialise(t, "gsim")
			for _, r := range tc.remove {
				if err := os.Remove(filepath.Join(dir, r)); err != nil {
					t.Fatal(err)
				}
			}
			s, err := ReadGSIM(dir)
			if err != nil {
				t.Fatal(err)
			}
			sameExamples(t, "train", s.Train, gsimTinyWant.Train)
			sameExamples(t, "val", s.Val, gsimTinyWant.Val)
			sameExamples(t, "test", s.Test, gsimTinyWant.Test)
			if !reflect.DeepEqual(s.Labels, gsimTinyWant.Labels) {
				t.Errorf("labels %q, want %q", s.Labels, gsimTinyWant.Labels)
			}
			var sources []string
			for _, n := range s.Notes {
				if strings.Contains(n, " dialogues from ") {
					sources = append(sources, n)
				}
			}
			if !reflect.DeepEqual(sources, tc.sources) {
				t.Errorf("source notes\n%q\nwant\n%q", sources, tc.sources)
			}
		})
	}
}

func TestReadGSIMErrors(t *testing.T) {
	t.Run("no fallback", func(t *testing.T) {
		dir := materialise(t, "gsim")
		if err := os.Remove(filepath.Join(dir, "data_ptm", "m2m", "data.zip")); err != nil {
			t.Fatal(err)
		}
		_, err := ReadGSIM(dir)
		wantErr(t, err, "sim-R/train.json is absent", "data.zip")
	})
	t.Run("bad act", func(t *testing.T) {
		dir := materialise(t, "gsim")
		path := filepath.Join(dir, "sim-M", "dev.json")
		bad := `[{"dialogue_id": "movies_9", "turns": [{"user_utterance": {"text": "hi"}},
			{"system_acts": [{"slot": "movie"}], "system_utterance": {"text": "which ?"}, "user_utterance": {"text": "up"}}]}]`
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadGSIM(dir)
		wantErr(t, err, "sim-M/dev.json", "dialogue 0 (movies_9) turn 1", "no type")
	})
	t.Run("no user utterance", func(t *testing.T) {
		dir := materialise(t, "gsim")
		path := filepath.Join(dir, "sim-M", "test.json")
		if err := os.WriteFile(path, []byte(`[{"dialogue_id": "movies_8", "turns": [{"user_acts": []}]}]`), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadGSIM(dir)
		wantErr(t, err, "sim-M/test.json", "dialogue 0 (movies_8) turn 0", "no user_utterance")
	})
}

// TestReadGSIM reads the shipped files: sim-M 384/120/264 and sim-R 1116/349/775 dialogues, sim-R's train and
// test from data.zip.
func TestReadGSIM(t *testing.T) {
	dir := shared.MustPath(t, "data", "eval", "gsim_m2m")
	start := time.Now()
	s, err := ReadGSIM(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read in %v; train %d, val %d, test %d examples; %d labels %q", time.Since(start), len(s.Train), len(s.Val), len(s.Test), len(s.Labels), s.Labels)
	for _, n := range s.Notes {
		t.Log(n)
	}
	if len(s.Train) != 6648 || len(s.Val) != 1647 || len(s.Test) != 3761 {
		t.Errorf("examples %d/%d/%d, want 6648/1647/3761", len(s.Train), len(s.Val), len(s.Test))
	}
	want := []string{"confirm", "negate", "notify_failure", "notify_success", "offer", "request", "select"}
	if !reflect.DeepEqual(s.Labels, want) {
		t.Errorf("labels %q, want %q", s.Labels, want)
	}
	for _, n := range []string{
		"GSIM sim-M train: 384 dialogues from sim-M/train.json",
		"GSIM sim-R train: 1116 dialogues from data_ptm/m2m/data.zip (sim-R/train.json absent)",
		"GSIM sim-R dev: 349 dialogues from sim-R/dev.json",
		"GSIM sim-R test: 775 dialogues from data_ptm/m2m/data.zip (sim-R/test.json absent)",
		"GSIM: system turns labelled, test 3,761 of 3,761",
	} {
		if !slices.Contains(s.Notes, n) {
			t.Errorf("no note %q", n)
		}
	}
	checkActSet(t, s)
	logFewShot(t, s)

	// Where Google's file and ToDDAPT's archive both hold a part, they agree turn for turn.
	zipped, err := readM2MZip(filepath.Join(dir, "data_ptm", "m2m", "data.zip"))
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []struct{ file, key string }{
		{"sim-M/train.json", "sim-M/train"}, {"sim-M/dev.json", "sim-M/val"}, {"sim-M/test.json", "sim-M/test"}, {"sim-R/dev.json", "sim-R/val"},
	} {
		fromFile, err := readGSIMFile(filepath.Join(dir, part.file))
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]actDialogue{}
		for _, d := range zipped[part.key] {
			byID[d.ID] = d
		}
		if len(byID) != len(fromFile) {
			t.Errorf("%s: %d dialogues, data.zip %s has %d", part.file, len(fromFile), part.key, len(byID))
		}
		for _, d := range fromFile {
			if z, ok := byID[d.ID]; !ok || !reflect.DeepEqual(d.Turns, z.Turns) {
				t.Errorf("%s: dialogue %s differs from data.zip's", part.file, d.ID)
				break
			}
		}
	}
}
