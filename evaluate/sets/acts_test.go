package sets

import (
	"archive/zip"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// materialise copies the hand-made layout testdata/acts/name into a temporary folder, turning every folder
// named X.zip.d into the archive X.zip whose members are the folder's files, and returns the folder.
func materialise(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("testdata", "acts", name)
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == src {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() && strings.HasSuffix(path, ".zip.d") {
			writeZipOf(t, path, filepath.Join(dst, strings.TrimSuffix(rel, ".d")))
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// writeZipOf writes the files of folder dir as the members of the archive at path.
func writeZipOf(t *testing.T, dir, path string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		w, err := z.Create(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// wantErr fails unless err is non-nil and contains every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

// ex builds an ActExample: the history, then "|", then the labels.
func ex(parts ...string) ActExample {
	for i, p := range parts {
		if p == "|" {
			return ActExample{History: parts[:i], Labels: parts[i+1:]}
		}
	}
	return ActExample{History: parts}
}

// sameExamples compares example lists, treating nil and empty alike.
func sameExamples(t *testing.T, what string, got, want []ActExample) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d examples, want %d: %+v", what, len(got), len(want), got)
		return
	}
	for i := range got {
		if !reflect.DeepEqual(got[i].History, want[i].History) || !reflect.DeepEqual(got[i].Labels, want[i].Labels) {
			t.Errorf("%s[%d] = %q / %q, want %q / %q", what, i, got[i].History, got[i].Labels, want[i].History, want[i].Labels)
		}
	}
}

func TestActExamples(t *testing.T) {
	ds := []actDialogue{
		{ID: "a", Turns: []actTurn{
			{Text: "u0"}, {System: true, Text: "s1", Labels: []string{"inform"}},
			{Text: "u2"}, {System: true, Text: "s3"}, // unknown acts: counted, not an example
			{Text: "u4"}, {System: true, Text: "s5", Labels: []string{"bye", "reqmore"}},
		}},
		{ID: "b", Turns: []actTurn{{System: true, Text: "s0", Labels: []string{"greet"}}, {Text: "u1"}}},
	}
	got, c := actExamples(ds)
	want := []ActExample{
		ex("u0", "s1", "|", "inform"),
		ex("u0", "s1", "u2", "s3", "u4", "s5", "|", "bye", "reqmore"),
		ex("s0", "|", "greet"),
	}
	sameExamples(t, "examples", got, want)
	if c != (actCount{System: 4, Labelled: 3}) {
		t.Errorf("count %+v, want 4 system turns, 3 labelled", c)
	}
	// Roles and the answering user turn, which TOD-BERT's input ends with (utils_universal_act.py
	// read_langs_turn: turn_usr follows turn_sys); s1 is answered by u2, b's s0 by u1;
	// s5 ends dialogue a.
	for i, w := range []struct {
		system  []bool
		reply   string
		replied bool
	}{
		{[]bool{false, true}, "u2", true},
		{[]bool{false, true, false, true, false, true}, "", false},
		{[]bool{true}, "u1", true},
	} {
		if !reflect.DeepEqual(got[i].System, w.system) || got[i].Reply != w.reply || got[i].Replied != w.replied {
			t.Errorf("example %d: roles %v reply %q (%v), want %v %q (%v)", i, got[i].System, got[i].Reply, got[i].Replied, w.system, w.reply, w.replied)
		}
	}
	// Histories share storage but are capacity-limited: appending to one must not change another.
	_ = append(got[0].History, "changed")
	if got[1].History[2] != "u2" {
		t.Errorf("appending to one history changed another: %q", got[1].History)
	}
	if v := labelVocab(want, []ActExample{ex("x", "|", "inform", "affirm")}); !reflect.DeepEqual(v, []string{"affirm", "bye", "greet", "inform", "reqmore"}) {
		t.Errorf("labelVocab = %q", v)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 22266: "22,266", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// fewShotSet is a tiny training split: "a" on rows 0-3, "b" on 2-5, "c" on row 6 only.
func fewShotSet() *ActSet {
	return &ActSet{Dataset: "tiny", Train: []ActExample{
		ex("0", "|", "a"), ex("1", "|", "a"), ex("2", "|", "a", "b"), ex("3", "|", "a", "b"),
		ex("4", "|", "b"), ex("5", "|", "b"), ex("6", "|", "c"),
	}}
}

// checkFewShot checks picked against the rule of FewShot: replayed in order, each row had a label below n
// when picked; afterwards every label has min(n, its rows in pool) rows; no two rows are the same.
func checkFewShot(t *testing.T, pool, picked []ActExample, n int) {
	t.Helper()
	count := map[string]int{}
	seen := map[string]bool{}
	for i, e := range picked {
		key := fmt.Sprintf("%p/%d", &e.History[0], len(e.History)) // the row's identity: histories of a dialogue share storage
		if seen[key] {
			t.Errorf("row %q picked twice", e.History)
		}
		seen[key] = true
		need := false
		for _, l := range e.Labels {
			need = need || count[l] < n
		}
		if !need {
			t.Errorf("pick %d (%q) adds no label still below %d", i, e.History, n)
		}
		for _, l := range e.Labels {
			count[l]++
		}
	}
	avail := map[string]int{}
	for _, e := range pool {
		for _, l := range e.Labels {
			avail[l]++
		}
	}
	for l, a := range avail {
		if count[l] < min(n, a) {
			t.Errorf("label %q has %d rows, want at least %d", l, count[l], min(n, a))
		}
	}
}

func TestFewShot(t *testing.T) {
	s := fewShotSet()
	for _, n := range []int{1, 2, 3, 10} {
		for seed := uint64(0); seed < 20; seed++ {
			got, err := s.FewShot(n, seed)
			if err != nil {
				t.Fatal(err)
			}
			checkFewShot(t, s.Train, got, n)
			again, _ := s.FewShot(n, seed)
			if !reflect.DeepEqual(got, again) {
				t.Fatalf("n=%d seed=%d: two draws differ", n, seed)
			}
		}
	}
	// n at least the largest label's count takes every row.
	if all, _ := s.FewShot(4, 7); len(all) != len(s.Train) {
		t.Errorf("FewShot(4) kept %d of %d rows", len(all), len(s.Train))
	}
	// Seeds matter: over 20 seeds, 1-shot draws are not all alike.
	distinct := map[string]bool{}
	for seed := uint64(0); seed < 20; seed++ {
		got, _ := s.FewShot(1, seed)
		var keys []string
		for _, e := range got {
			keys = append(keys, e.History[0])
		}
		distinct[strings.Join(keys, ",")] = true
	}
	if len(distinct) < 3 {
		t.Errorf("20 seeds gave %d distinct 1-shot draws", len(distinct))
	}
	// Pinned draw, so that a change of the rule or the generator shows.
	got, _ := s.FewShot(1, 42)
	var keys []string
	for _, e := range got {
		keys = append(keys, e.History[0])
	}
	if k := strings.Join(keys, ","); k != fewShotPinned {
		t.Errorf("FewShot(1, 42) rows %s, want %s", k, fewShotPinned)
	}

	for _, tc := range []struct {
		set  *ActSet
		n    int
		want string
	}{{s, 0, "n = 0"}, {&ActSet{Dataset: "multiwoz21"}, 10, "multiwoz21: the training split is empty"}} {
		_, err := tc.set.FewShot(tc.n, 1)
		wantErr(t, err, tc.want)
	}
}

// fewShotPinned is FewShot(1, 42) on fewShotSet, as rows' first turns in draw order.
const fewShotPinned = "6,0,4"

func TestFewShotSplits(t *testing.T) {
	s := fewShotSet()
	for seed := uint64(0); seed < 20; seed++ {
		train, val, err := s.FewShotSplits(1, seed)
		if err != nil {
			t.Fatal(err)
		}
		only, _ := s.FewShot(1, seed)
		if !reflect.DeepEqual(train, only) {
			t.Errorf("seed %d: FewShotSplits train differs from FewShot", seed)
		}
		inTrain := map[string]bool{}
		for _, e := range train {
			inTrain[e.History[0]] = true
		}
		var rest []ActExample
		for _, e := range s.Train {
			if !inTrain[e.History[0]] {
				rest = append(rest, e)
			}
		}
		for _, e := range val {
			if inTrain[e.History[0]] {
				t.Errorf("seed %d: row %s in both train and val", seed, e.History[0])
			}
		}
		checkFewShot(t, rest, val, 1)
	}
}
