package evaluate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSupportFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	sup, err := SampleSupport(toySplit, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	sf := &SplitFile{Task: "intent", Dataset: "toy", Source: "toy.csv", Rows: len(toySplit), K: 2, Seed: 4,
		Derivation: SupportDerivation, Support: sup}
	path, err := WriteSplitFile(dir, sf)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "toy-intent-k2-seed4.json" {
		t.Errorf("file name %s", filepath.Base(path))
	}
	back, err := ReadSupportFile(path, toySplit)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, sf) {
		t.Errorf("read back %+v, want %+v", back, sf)
	}
}

func TestCandidateFileRoundTrip(t *testing.T) {
	pairs := []QAPair{{"q0", "a0"}, {"q1", "a1"}, {"q2", "a2"}, {"q3", "a3"}}
	cands, err := SampleCandidates(AmazonQASet(pairs, "").Responses, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	sf := &SplitFile{Task: "response-selection", Dataset: "amazonqa", Source: "qa.json.gz", Rows: 4, Seed: 1,
		Derivation: CandidateDerivation, Candidates: cands}
	path, err := WriteSplitFile(t.TempDir(), sf)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "amazonqa-response-selection-seed1.json" {
		t.Errorf("file name %s", filepath.Base(path))
	}
	back, err := ReadCandidateFile(path, len(pairs))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, sf) {
		t.Errorf("read back %+v, want %+v", back, sf)
	}
}

// writeSplit writes sf as JSON under a temporary folder and returns its path.
func writeSplit(t *testing.T, sf SplitFile) string {
	t.Helper()
	data, err := json.Marshal(sf)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadSupportFileErrors(t *testing.T) {
	n := len(toySplit)
	for _, tc := range []struct {
		name   string
		sf     SplitFile
		errHas string
	}{
		{"row out of range", SplitFile{Rows: n, Support: []Support{{"a", []int{0, 9}}}}, "row 9 is out of range"},
		{"negative row", SplitFile{Rows: n, Support: []Support{{"a", []int{-1}}}}, "row -1 is out of range"},
		{"wrong label", SplitFile{Rows: n, Support: []Support{{"a", []int{1}}}}, `row 1 has label "c", want "a"`},
		{"repeated row", SplitFile{Rows: n, Support: []Support{{"a", []int{0}}, {"a", []int{0}}}}, "row 0 appears twice"},
		{"empty support", SplitFile{Rows: n, Support: []Support{{"a", nil}}}, "is empty"},
		{"no support", SplitFile{Rows: n}, "no support sets"},
		{"other data", SplitFile{Rows: n + 1, Source: "x.csv", Support: []Support{{"a", []int{0}}}}, "drawn from 10 rows of x.csv"},
	} {
		p := writeSplit(t, tc.sf)
		_, err := ReadSupportFile(p, toySplit)
		if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want one naming the file and holding %q", tc.name, err, tc.errHas)
		}
	}
	if _, err := ReadSupportFile(filepath.Join(t.TempDir(), "none.json"), toySplit); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file: error %v", err)
	}
	p := filepath.Join(t.TempDir(), "junk.json")
	if err := os.WriteFile(p, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSupportFile(p, toySplit); err == nil || !strings.Contains(err.Error(), "junk.json") {
		t.Errorf("malformed file: error %v", err)
	}
}

func TestReadCandidateFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c      Candidates
		errHas string
	}{
		{"row out of range", Candidates{Query: 0, Rows: []int{0, 5}, Answer: 0}, "row 5 is out of range"},
		{"query out of range", Candidates{Query: 4, Rows: []int{0, 1}, Answer: 0}, "query row 4 is out of range"},
		{"row twice", Candidates{Query: 0, Rows: []int{0, 1, 1}, Answer: 0}, "row 1 appears twice"},
		{"truth elsewhere", Candidates{Query: 0, Rows: []int{1, 0}, Answer: 0}, "does not hold the query's row 0"},
		{"answer past the end", Candidates{Query: 0, Rows: []int{1, 0}, Answer: 2}, "position 2"},
	} {
		p := writeSplit(t, SplitFile{Rows: 4, Candidates: []Candidates{tc.c}})
		_, err := ReadCandidateFile(p, 4)
		if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want one naming the file and holding %q", tc.name, err, tc.errHas)
		}
	}
	p := writeSplit(t, SplitFile{Rows: 4})
	if _, err := ReadCandidateFile(p, 4); err == nil || !strings.Contains(err.Error(), "no candidate lists") {
		t.Errorf("no lists: error %v", err)
	}
}
