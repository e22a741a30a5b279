package datasets

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// putTestFile writes data at root/rel, making its folders.
func putTestFile(t *testing.T, root, rel string, data []byte) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gzipTestBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// zipMember is one file of a test archive; Store leaves it uncompressed, so that a test can flip its bytes.
type zipMember struct {
	Name  string
	Data  []byte
	Store bool
}

func zipTestBytes(t *testing.T, members ...zipMember) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range members {
		method := zip.Deflate
		if m.Store {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.Name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(m.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// corruptStoredMember changes the first occurrence of old in the archive's bytes to new (same length), which in
// a stored member breaks its checksum but not its content's syntax.
func corruptStoredMember(t *testing.T, archive []byte, old, new string) []byte {
	t.Helper()
	if len(old) != len(new) || !bytes.Contains(archive, []byte(old)) {
		t.Fatalf("cannot replace %q by %q in the archive", old, new)
	}
	return bytes.Replace(archive, []byte(old), []byte(new), 1)
}

// malformedCase is a corpus folder holding a malformed record: the strict read must fail naming want (the file
// or member, the record and the problem); with SkipBad, kept dialogues remain and skipped records are
// logged, or with skipped < 0 the read still fails.
type malformedCase struct {
	name    string
	setup   func(t *testing.T, root string)
	want    []string
	kept    int
	skipped int
}

func runMalformedCases(t *testing.T, corpus string, cases []malformedCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			c.setup(t, root)
			_, err := ReadCorpus(corpus, root, ReadOptions{})
			if err == nil {
				t.Fatal("malformed data read without error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			log, logs := observedLogger()
			ds, err := ReadCorpus(corpus, root, ReadOptions{SkipBad: true, Logger: log})
			if c.skipped < 0 {
				if err == nil {
					t.Fatal("SkipBad read a broken file without error")
				}
				return
			}
			if err != nil {
				t.Fatalf("SkipBad: %v", err)
			}
			if len(ds) != c.kept {
				t.Errorf("SkipBad kept %d dialogues, want %d", len(ds), c.kept)
			}
			if got := loggedSkips(logs); got != c.skipped {
				t.Errorf("logged %d skipped records, want %d", got, c.skipped)
			}
		})
	}
}

func observedLogger() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

// loggedSkips sums the per-file skip counts logged.
func loggedSkips(logs *observer.ObservedLogs) int {
	n := 0
	for _, e := range logs.FilterMessage("skipped malformed records").All() {
		n += int(e.ContextMap()["skipped"].(int64))
	}
	return n
}

// checkReadDialogues asserts what every reader promises of its output.
func checkReadDialogues(t testing.TB, corpus string, ds []Dialogue, merged bool) {
	t.Helper()
	for _, d := range ds {
		if d.ID == "" || d.Corpus != corpus {
			t.Fatalf("dialogue %+v: empty id or corpus not %s", d, corpus)
		}
		for j, tr := range d.Turns {
			if tr.Speaker != User && tr.Speaker != System {
				t.Fatalf("dialogue %s turn %d: speaker %q", d.ID, j, tr.Speaker)
			}
			if tr.Text == "" || tr.Text != cleanText(tr.Text) {
				t.Fatalf("dialogue %s turn %d: text %q is empty or not clean", d.ID, j, tr.Text)
			}
			if merged && j > 0 && d.Turns[j-1].Speaker == tr.Speaker {
				t.Fatalf("dialogue %s turn %d: same speaker as the turn before after merging", d.ID, j)
			}
		}
	}
}

// fuzzRecordParser runs a record parser strictly, with SkipBad and with merging, and checks that none panics, that
// output keeps the readers' promises, that errors name the file, and that SkipBad changes nothing on input
// the strict parser accepts.
func fuzzRecordParser(t *testing.T, corpus string, data []byte, parse func(*source, *bytes.Reader) ([]Dialogue, error)) {
	const name = "fuzz-input"
	strict, serr := parse(newSource(corpus, name, ReadOptions{}), bytes.NewReader(data))
	if serr != nil && !strings.Contains(serr.Error(), name) {
		t.Fatalf("error %q does not name the file", serr)
	}
	if serr == nil {
		checkReadDialogues(t, corpus, strict, false)
	}
	skip, kerr := parse(newSource(corpus, name, ReadOptions{SkipBad: true}), bytes.NewReader(data))
	if kerr == nil {
		checkReadDialogues(t, corpus, skip, false)
	}
	if serr == nil && (kerr != nil || !sameReadDialogues(strict, skip)) {
		t.Fatalf("SkipBad changed the result of a clean input: %v", kerr)
	}
	merged, merr := parse(newSource(corpus, name, ReadOptions{SkipBad: true, MergeSameSpeaker: true}), bytes.NewReader(data))
	if merr == nil {
		checkReadDialogues(t, corpus, merged, true)
	}
}

func sameReadDialogues(a, b []Dialogue) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Domain != b[i].Domain || len(a[i].Turns) != len(b[i].Turns) {
			return false
		}
		for j := range a[i].Turns {
			if a[i].Turns[j] != b[i].Turns[j] {
				return false
			}
		}
	}
	return true
}
