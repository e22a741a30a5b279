package datasets

import (
	"archive/zip"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"convrep/internal/shared"
)

// multiWOZ21EvalIDs are the dialogue ids ("PMUL1635") of MultiWOZ 2.1's validation and test sets, the
// keys of the shared evaluation copy's val.json and test.json (each in a zip of its own).
func multiWOZ21EvalIDs(t *testing.T) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, split := range []string{"val", "test"} {
		zr, err := zip.OpenReader(shared.MustPath(t, "data", "eval", "multiwoz21", "data", "multiwoz", split+".json.zip"))
		if err != nil {
			t.Fatal(err)
		}
		if len(zr.File) != 1 {
			t.Fatalf("%s.json.zip: %d members, want 1", split, len(zr.File))
		}
		rc, err := zr.File[0].Open()
		if err != nil {
			t.Fatal(err)
		}
		var dialogues map[string]json.RawMessage
		b, err := io.ReadAll(rc)
		rc.Close()
		zr.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &dialogues); err != nil {
			t.Fatalf("%s.json: %v", split, err)
		}
		for id := range dialogues {
			ids[strings.TrimSuffix(id, ".json")] = true
		}
	}
	return ids
}

// TestMetaLWOZMultiWOZLeak: MetaLWOZ's test release brings 2,924 MultiWOZ 2.0 dialogues, 430 of them in
// MultiWOZ 2.1's validation or test set; the default pretraining data holds none of them, and
// MetaLWOZMultiWOZ brings all 2,924 back.
func TestMetaLWOZMultiWOZLeak(t *testing.T) {
	eval := multiWOZ21EvalIDs(t)
	if len(eval) < 1900 {
		t.Fatalf("%d MultiWOZ 2.1 val/test ids: the evaluation copy is not the one expected", len(eval))
	}
	root := sharedCorpusRoot(t, "metalwoz")
	for _, c := range []struct {
		keep          bool
		multiWOZ, val int
	}{{false, 0, 0}, {true, 2924, 430}} {
		ds := readSharedCorpus(t, "metalwoz")
		if c.keep {
			var err error
			if ds, err = ReadCorpus("metalwoz", root, ReadOptions{MetaLWOZMultiWOZ: true}); err != nil {
				t.Fatal(err)
			}
		}
		multiWOZ, val := 0, 0
		for _, d := range ds {
			id := d.ID[strings.IndexByte(d.ID, '/')+1:]
			if IsMetaLWOZMultiWOZ(d) {
				multiWOZ++
			}
			if eval[id] {
				val++
			}
		}
		if multiWOZ != c.multiWOZ || val != c.val {
			t.Errorf("MetaLWOZMultiWOZ %v: %d MultiWOZ dialogues, %d in MultiWOZ 2.1 val/test; want %d, %d",
				c.keep, multiWOZ, val, c.multiWOZ, c.val)
		}
	}
}

// The pretraining data as experiments read it, every corpus, holds no MultiWOZ 2.1 val/test dialogue.
func TestDefaultPretrainingHasNoMultiWOZEval(t *testing.T) {
	eval := multiWOZ21EvalIDs(t)
	for _, name := range Corpora() {
		for _, d := range readSharedCorpus(t, name) {
			id := d.ID[strings.LastIndexByte(d.ID, '/')+1:]
			if IsMetaLWOZMultiWOZ(d) || eval[id] {
				t.Errorf("%s: dialogue %s is MultiWOZ's", name, d.ID)
			}
		}
	}
}

func TestDropMetaLWOZMultiWOZ(t *testing.T) {
	ds := []Dialogue{
		{ID: "dstc8_metalwoz_heldout/a", Corpus: "metalwoz"},
		{ID: "dstc8_multiwoz2.0/SNG01856", Corpus: "metalwoz"},
		{ID: "dstc8_multiwoz2.0/SNG1", Corpus: "other"}, // another corpus's ids are its own
		{ID: "dstc8_multiwoz2.0x/b", Corpus: "metalwoz"},
	}
	got, n := DropMetaLWOZMultiWOZ(ds)
	if n != 1 || len(got) != 3 || got[1].ID != "dstc8_multiwoz2.0/SNG1" || got[2].ID != "dstc8_multiwoz2.0x/b" {
		t.Errorf("dropped %d, kept %+v", n, got)
	}
}
