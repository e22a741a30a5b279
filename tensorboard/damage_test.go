package tensorboard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writeEvents writes a file of the file_version event and one event of scalars for each step, and returns
// its path and the byte offset of each record.
func writeEvents(t testing.TB, dir string, steps ...int64) (string, []int64) {
	t.Helper()
	path := filepath.Join(dir, FileName(time.Unix(1700000000, 0)))
	w, err := Create(path, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if err := w.Add(s, time.Unix(1700000000+s, 0), []Scalar{{"train/loss", float32(s) / 10}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	offsets := []int64{0}
	r := NewReader(bytes.NewReader(mustRead(t, path)), path, -1)
	for {
		if _, err := r.Next(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		offsets = append(offsets, r.Offset())
	}
	return path, offsets[:len(offsets)-1]
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func stepsOf(events []Event) []int64 {
	var s []int64
	for _, e := range events {
		if e.FileVersion == "" {
			s = append(s, e.Step)
		}
	}
	return s
}

// A damaged file is reported with its name, the damaged record's byte offset and the problem; the events
// before it are read.
func TestDamagedFiles(t *testing.T) {
	dir := t.TempDir()
	path, off := writeEvents(t, dir, 10, 20, 30)
	good := mustRead(t, path)
	huge := bytes.Clone(good)
	binary.LittleEndian.PutUint64(huge[off[2]:], 1<<62) // and a length CRC that fits it
	binary.LittleEndian.PutUint32(huge[off[2]+8:], maskedCRC(huge[off[2]:off[2]+8]))
	pastEnd := bytes.Clone(good)
	binary.LittleEndian.PutUint64(pastEnd[off[3]:], 1000)
	binary.LittleEndian.PutUint32(pastEnd[off[3]+8:], maskedCRC(pastEnd[off[3]:off[3]+8]))
	flip := func(at int64) []byte { b := bytes.Clone(good); b[at] ^= 0x10; return b }
	notProto := appendRecord(bytes.Clone(good), []byte{0x0B})
	cases := []struct {
		name    string
		data    []byte
		offset  int64
		problem string
		read    int // events read before the damage
	}{
		{"flipped length byte", flip(off[1]), off[1], "length CRC", 1},
		{"flipped length CRC", flip(off[2] + 9), off[2], "length CRC", 2},
		{"flipped data byte", flip(off[2] + 14), off[2], "data CRC", 2},
		{"flipped data CRC", flip(int64(len(good)) - 1), off[3], "data CRC", 3},
		{"truncated header", good[:off[3]+5], off[3], "truncated: 5 of the header's 12 bytes", 3},
		{"truncated data", good[:len(good)-3], off[3], "truncated: length", 3},
		{"huge length", huge, off[2], "over the 67108864 bytes", 2},
		{"length past the end", pastEnd, off[3], "runs past the end of the file", 3},
		{"not an event", notProto, int64(len(good)), "malformed protobuf", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "damaged.tfevents")
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			events, err := ReadFile(p)
			var d *DamageError
			if !errors.As(err, &d) || d.File != p || d.Offset != c.offset || !strings.Contains(d.Problem, c.problem) {
				t.Fatalf("error %v, want one at byte %d about %q", err, c.offset, c.problem)
			}
			if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "byte ") {
				t.Errorf("error %q names neither the file nor the offset", err)
			}
			if len(events) != c.read {
				t.Errorf("%d events read before the damage, want %d", len(events), c.read)
			}
		})
	}
}

// A stream of unknown size still refuses a length over MaxRecordLen before allocating it, and reports a
// length that runs past the stream's end as truncation.
func TestUnknownSizeStream(t *testing.T) {
	var h [headerLen]byte
	binary.LittleEndian.PutUint64(h[:8], MaxRecordLen+1)
	binary.LittleEndian.PutUint32(h[8:], maskedCRC(h[:8]))
	_, err := NewReader(bytes.NewReader(h[:]), "stream", -1).Next()
	if d := (*DamageError)(nil); !errors.As(err, &d) || d.Offset != 0 || !strings.Contains(d.Problem, "over the") {
		t.Errorf("huge length: %v", err)
	}
	binary.LittleEndian.PutUint64(h[:8], 1000)
	binary.LittleEndian.PutUint32(h[8:], maskedCRC(h[:8]))
	_, err = NewReader(bytes.NewReader(append(h[:], 1, 2, 3)), "stream", -1).Next()
	if d := (*DamageError)(nil); !errors.As(err, &d) || !strings.Contains(d.Problem, "truncated: 3 of the record's 1004 bytes") {
		t.Errorf("short record: %v", err)
	}
}

// Resume keeps the events at or before the step, then appends: a run resumed from step 20 that writes 30 and
// 40 again has each step once.
func TestResumeKeepsStepsUpToTheCheckpoint(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(b []byte, off []int64) []byte
		keep    int64
		kept    []int64
		damaged bool
	}{
		{"interrupted after the checkpoint", nil, 20, []int64{10, 20}, false},
		{"stopped at the checkpoint", nil, 40, []int64{10, 20, 30, 40}, false},
		{"from the start", nil, 0, nil, false},
		{"torn last record", func(b []byte, off []int64) []byte { return b[:len(b)-2] }, 20, []int64{10, 20}, true},
		{"damage before the checkpoint", func(b []byte, off []int64) []byte { b[off[2]+14] ^= 1; return b }, 30, []int64{10}, true},
		{"first record lost", func(b []byte, off []int64) []byte { b[3] ^= 1; return b }, 30, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, off := writeEvents(t, t.TempDir(), 10, 20, 30, 40)
			if c.damage != nil {
				if err := os.WriteFile(path, c.damage(mustRead(t, path), off), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w, kept, err := Resume(path, c.keep, time.Unix(1800000000, 0))
			if err != nil {
				t.Fatal(err)
			}
			if (kept.Damage != nil) != c.damaged || kept.Steps != len(c.kept) {
				t.Errorf("kept %+v, want %d steps, damage %v", kept, len(c.kept), c.damaged)
			}
			if n := len(c.kept); n > 0 && kept.LastStep != c.kept[n-1] {
				t.Errorf("last step kept %d, want %d", kept.LastStep, c.kept[n-1])
			}
			var again []int64
			for s := kept.LastStep + 10; s <= 50; s += 10 {
				again = append(again, s)
				if err := w.Add(s, time.Now(), []Scalar{{"train/loss", 1}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			events, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if events[0].FileVersion != FileVersion {
				t.Errorf("first event %+v", events[0])
			}
			if want := append(c.kept, again...); !reflect.DeepEqual(stepsOf(events), want) {
				t.Errorf("steps %v, want %v", stepsOf(events), want)
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("%d files beside the event file, want none", len(entries)-1)
			}
		})
	}
}

func TestResumeWithoutAFileCreatesOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName(time.Now()))
	w, kept, err := Resume(path, 100, time.Now())
	if err != nil || kept != (Kept{}) {
		t.Fatalf("%+v, %v", kept, err)
	}
	w.Close()
	if events, err := ReadFile(path); err != nil || len(events) != 1 || events[0].FileVersion != FileVersion {
		t.Errorf("%+v, %v", events, err)
	}
}

func TestFindTakesTheNewestOfItsOwnFiles(t *testing.T) {
	dir := t.TempDir()
	if p, err := Find(dir); p != "" || err != nil {
		t.Errorf("empty folder: %q, %v", p, err)
	}
	if p, err := Find(filepath.Join(dir, "missing")); p != "" || err != nil {
		t.Errorf("missing folder: %q, %v", p, err)
	}
	for _, name := range []string{
		"events.out.tfevents.999.host.convrep",
		"events.out.tfevents.1000.host.convrep", // newer, though it sorts first by name
		"events.out.tfevents.2000.host.other",   // another writer's
		".events.out.tfevents.3000.host.convrep.tmp-1",
		"metrics.jsonl",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := Find(dir); err != nil || filepath.Base(p) != "events.out.tfevents.1000.host.convrep" {
		t.Errorf("found %q, %v", p, err)
	}
	if n := FileName(time.Unix(1234, 0)); !strings.HasPrefix(n, "events.out.tfevents.1234.") || !strings.HasSuffix(n, ".convrep") || strings.Contains(n, "/") {
		t.Errorf("file name %q", n)
	}
}

func TestWriteFileReplacesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName(time.Now()))
	for _, steps := range [][]int64{{1, 2, 3}, {7}} {
		var events []Event
		for _, s := range steps {
			events = append(events, Event{Step: s, Scalars: []Scalar{{"eval/x", float32(s)}}})
		}
		if err := WriteFile(path, time.Now(), events); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil || got[0].FileVersion != FileVersion || !reflect.DeepEqual(stepsOf(got), steps) {
			t.Errorf("%+v, %v; want steps %v", got, err, steps)
		}
	}
}

// FuzzReader: any bytes read as an event file give events and then io.EOF or a DamageError, never a panic,
// and never more memory than the input's length allows.
func FuzzReader(f *testing.F) {
	path, _ := writeEvents(f, f.TempDir(), 1, 2)
	good := mustRead(f, path)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(appendRecord(nil, []byte{0x2A, 0x03, 0x0A, 0x01, 0x0A}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b), "fuzz", int64(len(b)))
		for {
			e, err := r.Next()
			if err == io.EOF {
				return
			}
			var d *DamageError
			if err != nil {
				if !errors.As(err, &d) || d.Offset < 0 || d.Offset > int64(len(b)) {
					t.Fatalf("error %v", err)
				}
				return
			}
			// What decodes encodes to a message that decodes the same (compared encoded, as NaNs are unequal).
			var back Event
			if err := back.unmarshal(e.marshal(nil)); err != nil || !bytes.Equal(back.marshal(nil), e.marshal(nil)) {
				t.Fatalf("%+v re-encoded decodes as %+v, %v", e, back, err)
			}
		}
	})
}
