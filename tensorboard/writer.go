package tensorboard

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"convrep/internal/atomicfile"
)

// Writer appends events to one event file. Each Add is one write to the file, so that TensorBoard sees a
// step as soon as it is added; Sync makes the events added so far durable.
type Writer struct {
	f    *os.File
	path string
	buf  []byte // the record being written, reused
}

// Prefix and Suffix frame the names of the event files this package makes (FileName).
const (
	Prefix = "events.out.tfevents."
	Suffix = ".convrep"
)

// FileName is the name of a new event file, TensorFlow's pattern (event_writer.cc):
// events.out.tfevents.<Unix seconds>.<host><Suffix>.
func FileName(now time.Time) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.NewReplacer("/", "_", string(filepath.Separator), "_").Replace(host)
	return fmt.Sprintf("%s%d.%s%s", Prefix, now.Unix(), host, Suffix)
}

// Find returns the path of the newest event file this package made in dir (by name, which starts with its
// creation time), or "" when there is none.
func Find(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && strings.HasPrefix(n, Prefix) && strings.HasSuffix(n, Suffix) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	slices.SortFunc(names, func(a, b string) int { // by creation time, then name
		return cmp.Or(cmp.Compare(createdAt(a), createdAt(b)), strings.Compare(a, b))
	})
	return filepath.Join(dir, names[len(names)-1]), nil
}

// createdAt is the Unix time in an event file's name, 0 when it has none.
func createdAt(name string) int64 {
	var t int64
	for _, c := range strings.TrimPrefix(name, Prefix) {
		if c < '0' || c > '9' {
			break
		}
		t = t*10 + int64(c-'0')
	}
	return t
}

// Create makes a new event file at path, failing if one is there, and writes its file_version event.
func Create(path string, now time.Time) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	w := &Writer{f: f, path: path}
	if err := w.add(Event{WallTime: wallTime(now), FileVersion: FileVersion}); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Kept is what Resume kept of an event file.
type Kept struct {
	Steps    int   // events with scalars kept
	LastStep int64 // the highest step among them, 0 when none
	// Damage, when not nil, is where the file stopped being readable: the events from there on are gone
	// (a caller may write them again from another record of the run).
	Damage *DamageError
}

// Resume rewrites the event file at path with only its events at or before step, atomically and one record
// in memory at a time, then opens it to add the events after step: a resumed run that writes its steps again
// leaves each step in the file once. A file that does not exist is created; the copy stops at a damaged
// record, which Kept reports.
func Resume(path string, step int64, now time.Time) (*Writer, Kept, error) {
	var kept Kept
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		w, err := Create(path, now)
		return w, kept, err
	}
	err := atomicfile.Write(path, func(out io.Writer) error {
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		st, err := in.Stat()
		if err != nil {
			return err
		}
		r := NewReader(in, path, st.Size())
		var buf []byte
		for first := true; ; first = false {
			e, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			var d *DamageError
			if errors.As(err, &d) {
				kept.Damage = d
				err = nil
			}
			if err != nil {
				return err
			}
			if first && e.FileVersion == "" { // a file whose first record is lost starts anew with one
				buf = appendRecord(buf[:0], (&Event{WallTime: wallTime(now), FileVersion: FileVersion}).marshal(nil))
				if _, err := out.Write(buf); err != nil {
					return err
				}
			}
			if kept.Damage != nil {
				break
			}
			if e.Step > step {
				continue
			}
			if len(e.Scalars) > 0 {
				kept.Steps++
				kept.LastStep = max(kept.LastStep, e.Step)
			}
			buf = appendRecord(buf[:0], e.marshal(nil))
			if _, err := out.Write(buf); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, Kept{}, fmt.Errorf("tensorboard: keep %s up to step %d: %w", path, step, err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, Kept{}, fmt.Errorf("tensorboard: %w", err)
	}
	return &Writer{f: f, path: path}, kept, nil
}

// WriteFile writes an event file at path holding events after its file_version event, atomically: a
// reader sees the previous file or the whole new one.
func WriteFile(path string, now time.Time, events []Event) error {
	err := atomicfile.Write(path, func(out io.Writer) error {
		var buf []byte
		for _, e := range append([]Event{{WallTime: wallTime(now), FileVersion: FileVersion}}, events...) {
			buf = appendRecord(buf[:0], e.marshal(nil))
			if _, err := out.Write(buf); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("tensorboard: %w", err)
	}
	return nil
}

// Path is the file the writer adds to.
func (w *Writer) Path() string { return w.path }

// Add writes an event of scalars at step, stamped with now.
func (w *Writer) Add(step int64, now time.Time, scalars []Scalar) error {
	return w.add(Event{WallTime: wallTime(now), Step: step, Scalars: scalars})
}

func (w *Writer) add(e Event) error {
	w.buf = appendRecord(w.buf[:0], e.marshal(nil))
	if _, err := w.f.Write(w.buf); err != nil {
		return fmt.Errorf("tensorboard: %w", err)
	}
	return nil
}

// Sync makes the events added so far durable.
func (w *Writer) Sync() error {
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("tensorboard: sync %s: %w", w.path, err)
	}
	return nil
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

// wallTime is t in seconds since the Unix epoch, as event.proto's wall_time.
func wallTime(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
