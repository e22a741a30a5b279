package sets

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"convrep/internal/shared"
)

func TestReadDSTC2Tiny(t *testing.T) {
	s, err := ReadDSTC2(materialise(t, "dstc2"))
	if err != nil {
		t.Fatal(err)
	}
	sameExamples(t, "train", s.Train, []ActExample{
		// "NANDOS serves Portuguese food" matches "nandos serves portuguese food ." after normalisation.
		ex("i want portuguese food", "NANDOS serves Portuguese food", "|", "inform", "offer"),
		ex("i want portuguese food", "NANDOS serves Portuguese food", "thank you", "Can I help you with anything else?", "|", "reqmore"),
	})
	// "Sorry, I can't hear you" has pairs with acts repeat and inform+offer: ambiguous, no example.
	sameExamples(t, "val", s.Val, []ActExample{
		ex("korean food in the north", "I'm sorry but there is no korean restaurant in the north of town", "|", "canthelp"),
	})
	// "the unknown place is nice" matches no pair.
	sameExamples(t, "test", s.Test, []ActExample{
		ex("hello", "What part of town do you have in mind?", "|", "request"),
	})
	if want := []string{"canthelp", "inform", "offer", "reqmore", "request"}; !reflect.DeepEqual(s.Labels, want) {
		t.Errorf("labels %q, want %q", s.Labels, want)
	}
	for i, want := range []string{
		"DSTC2: 4 of 6 system turns labelled (train 2 of 2, val 1 of 2, test 1 of 2)",
		"DSTC2: 1 system turns (1 distinct texts) match no pair and 1 match pairs that disagree on act types",
	} {
		if i >= len(s.Notes) || !strings.HasPrefix(s.Notes[i], want) {
			t.Errorf("note %d = %q, want it to start %q", i, s.Notes, want)
		}
	}
}

func TestDSTC2Key(t *testing.T) {
	for in, want := range map[string]string{
		"Sorry, I can't hear you":          "sorry i can t hear you",
		"  The post code is C.B 2, 1 A.B ": "the post code is c b 2 1 a b",
		"There are  restaurants .":         "there are restaurants",
		"":                                 "",
	} {
		if got := dstc2Key(in); got != want {
			t.Errorf("dstc2Key(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadDSTC2Errors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string // relative to the layout; "" removes nothing
		data  string // written to file; "-" removes it
		parts []string
	}{
		{"no blank line", "src/data/valid_data", "repeat()\nrepeat()\nsay again\n\nbye()\nbye()\ngoodbye\nX\n",
			[]string{"valid_data", "pair 1 (line 8)", "want a blank line"}},
		{"bad act", "src/data/train_data", "request(area)\nrequest area\nwhat area\n\n",
			[]string{"train_data", "pair 0 (line 2)", `act "request"`}},
		{"ragged", "src/data/test_data", "a()\na()\nx\n", []string{"test_data", "3 lines, want blocks of 4"}},
		{"missing pairs", "src/data/test_data", "-", []string{"test_data"}},
		{"missing dialogues", "data_ptm/dstc2/data.zip", "-", []string{"data.zip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := materialise(t, "dstc2")
			path := filepath.Join(dir, tc.file)
			var err error
			if tc.data == "-" {
				err = os.Remove(path)
			} else {
				err = os.WriteFile(path, []byte(tc.data), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = ReadDSTC2(dir)
			wantErr(t, err, tc.parts...)
		})
	}
	t.Run("bad speaker", func(t *testing.T) {
		dir := materialise(t, "dstc2")
		src := filepath.Join("testdata", "acts", "dstc2", "data_ptm", "dstc2", "data.zip.d", "data.json")
		raw, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		member := filepath.Join(t.TempDir(), "data.zip.d")
		if err := os.MkdirAll(member, 0o755); err != nil {
			t.Fatal(err)
		}
		bad := strings.Replace(string(raw), `"speaker": "user", "utterance": "ok"`, `"speaker": "wizard", "utterance": "ok"`, 1)
		if err := os.WriteFile(filepath.Join(member, "data.json"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		writeZipOf(t, member, filepath.Join(dir, "data_ptm", "dstc2", "data.zip"))
		_, err = ReadDSTC2(dir)
		wantErr(t, err, "data.zip: member data.json", "dialogue dstc2_1 turn 2", `speaker "wizard"`)
	})
}

// TestReadDSTC2 reads the shipped files: dialogues 1612/506/1117 with their system turns labelled from the
// act-to-utterance pairs.
func TestReadDSTC2(t *testing.T) {
	start := time.Now()
	s, err := ReadDSTC2(shared.MustPath(t, "data", "eval", "dstc2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read in %v; train %d, val %d, test %d examples; %d labels %q", time.Since(start), len(s.Train), len(s.Val), len(s.Test), len(s.Labels), s.Labels)
	for _, n := range s.Notes {
		t.Log(n)
	}
	if len(s.Train) != 9596 || len(s.Val) != 3241 || len(s.Test) != 8508 {
		t.Errorf("examples %d/%d/%d, want 9596/3241/8508", len(s.Train), len(s.Val), len(s.Test))
	}
	want := []string{"canthelp", "canthelp.exception", "confirm-domain", "expl-conf", "impl-conf", "inform", "offer", "repeat", "reqmore", "request", "select"}
	if !reflect.DeepEqual(s.Labels, want) {
		t.Errorf("labels %q, want %q", s.Labels, want)
	}
	if len(s.Notes) == 0 || !strings.HasPrefix(s.Notes[0], "DSTC2: 21,345 of 22,266 system turns labelled (train 9,596 of 10,065, val 3,241 of 3,428, test 8,508 of 8,773)") {
		t.Errorf("first note %q", s.Notes)
	}
	checkActSet(t, s)
	logFewShot(t, s)
}

// checkActSet checks what holds for every set read from the shipped files: each history starts with the
// user and ends with the labelled system turn (even length), has no empty turn, and labels are sorted,
// distinct and in the vocabulary.
func checkActSet(t *testing.T, s *ActSet) {
	t.Helper()
	vocab := map[string]bool{}
	for _, l := range s.Labels {
		vocab[l] = true
	}
	for name, split := range map[string][]ActExample{"train": s.Train, "val": s.Val, "test": s.Test} {
		for i, e := range split {
			if len(e.History)%2 != 0 || len(e.Labels) == 0 {
				t.Fatalf("%s %d: %d turns, %d labels; want an even number of turns and a label", name, i, len(e.History), len(e.Labels))
			}
			for _, h := range e.History {
				if h == "" {
					t.Fatalf("%s %d: empty turn in %q", name, i, e.History)
				}
			}
			for j, l := range e.Labels {
				if !vocab[l] || (j > 0 && e.Labels[j-1] >= l) {
					t.Fatalf("%s %d: labels %q not sorted, distinct and in the vocabulary", name, i, e.Labels)
				}
			}
		}
	}
}

// logFewShot checks the 10- and 20-shot draws of five seeds against FewShot's rule and logs their mean size,
// to set beside DSE's averages (Appendix B.2).
func logFewShot(t *testing.T, s *ActSet) {
	t.Helper()
	for _, n := range []int{10, 20} {
		total := 0
		for seed := uint64(0); seed < 5; seed++ {
			got, err := s.FewShot(n, seed)
			if err != nil {
				t.Fatal(err)
			}
			checkFewShot(t, s.Train, got, n)
			total += len(got)
		}
		t.Logf("%s %d-shot: %.1f examples on average over seeds 0-4", s.Dataset, n, float64(total)/5)
	}
}
