package datasets

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// A deflated member whose compressed bytes are garbled fails naming the archive, the member and where the
// reading stopped; with SkipBad what came before is kept and the loss counted.
func TestGarbledDeflatedMember(t *testing.T) {
	var recs []string
	for i := 0; i < 200; i++ {
		recs = append(recs, framesRecord(fmt.Sprintf("f-%d", i), "user", strings.Repeat(fmt.Sprintf("text %d ", i*7919%1000), 20)))
	}
	archive := zipTestBytes(t, zipMember{Name: "frames.json", Data: []byte("[" + strings.Join(recs, ",") + "]")})
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatal(err)
	}
	off, err := zr.File[0].DataOffset()
	if err != nil {
		t.Fatal(err)
	}
	mid := off + int64(zr.File[0].CompressedSize64)/2
	for i := mid; i < mid+64; i++ {
		archive[i] ^= 0x5a
	}
	root := t.TempDir()
	putTestFile(t, root, framesZip, archive)
	_, err = ReadCorpus("frames", root, ReadOptions{})
	var rerr *RecordError
	if !errors.As(err, &rerr) || !strings.HasSuffix(rerr.Source, "original_data.zip!frames.json") ||
		!regexp.MustCompile(`^(record \d+|end of file)$`).MatchString(rerr.Record) {
		t.Fatalf("error %v, want a RecordError naming the member and the record", err)
	}
	log, logs := observedLogger()
	ds, err := ReadCorpus("frames", root, ReadOptions{SkipBad: true, Logger: log})
	if err != nil || len(ds) >= 200 || loggedSkips(logs) != 1 {
		t.Errorf("SkipBad: %d dialogues, %d skips logged, %v; want fewer than 200 and 1", len(ds), loggedSkips(logs), err)
	}
}

func TestInParallelKeepsOrder(t *testing.T) {
	got, err := inParallel(50, func(i int) (int, error) { return i * i, nil })
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != i*i {
			t.Fatalf("result %d = %d", i, v)
		}
	}
	_, err = inParallel(50, func(i int) (int, error) {
		if i == 7 || i == 30 {
			return 0, fmt.Errorf("fail %d", i)
		}
		return i, nil
	})
	if err == nil || err.Error() != "fail 7" {
		t.Errorf("error %v, want that of the lowest index", err)
	}
	if got, err := inParallel(0, func(int) (int, error) { return 0, nil }); err != nil || len(got) != 0 {
		t.Errorf("no work: %v, %v", got, err)
	}
}
