package datasets

import (
	"fmt"
	"io"

	"go.uber.org/zap"
)

// RecordError is a malformed record: the file (or "archive.zip!member") it is in, the record within it
// ("record 3 (dialogue 1_00003)", "line 17 (session 5)") and what is wrong.
type RecordError struct {
	Source string
	Record string
	Err    error
}

func (e *RecordError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Source, e.Record, e.Err) }

func (e *RecordError) Unwrap() error { return e.Err }

// source is one file, or archive member, being parsed: it names the place in errors and counts the records
// skipped under SkipBad.
type source struct {
	corpus  string
	name    string
	opt     ReadOptions
	skipped int
	// For a file of data.files: the layout of its records (FileReport.Shape), and what was dropped.
	shape   string
	dropped Dropped
	// runs, when set, hears each run of consecutive rows of one dialogue in a file of turns as it begins
	// (FileSet.scattered); byRows says that the file is one of turns.
	runs   func(id string)
	byRows bool
}

// opened notes that the consecutive rows of dialogue id begin.
func (s *source) opened(id string) {
	s.byRows = true
	if s.runs != nil {
		s.runs(id)
	}
}

func newSource(corpus, name string, opt ReadOptions) *source {
	return &source{corpus: corpus, name: name, opt: opt}
}

// MaxListedBad bounds the malformed records listed one by one, per file: each of the first is logged (at info
// level) with its place and problem; the file's count, logged when it has been read, covers the rest.
const MaxListedBad = 100

// bad reports a malformed record: the error to stop on, or nil when SkipBad counts it instead and lists it:
// hands it to ReadOptions.Bad, or else logs it (the first MaxListedBad of the file).
func (s *source) bad(record string, err error) error {
	rerr := &RecordError{Source: s.name, Record: record, Err: err}
	if !s.opt.SkipBad {
		return rerr
	}
	s.skipped++
	if s.opt.Bad != nil {
		s.opt.Bad(rerr)
	} else if s.skipped <= MaxListedBad {
		s.opt.logger().Info("skipped a malformed record", zap.String("file", s.name), zap.String("record", record),
			zap.String("problem", err.Error()))
	}
	return nil
}

// finish logs the skip count of the file, once it has been read, and how many of them were listed.
func (s *source) finish() {
	if s.skipped > 0 {
		s.opt.logger().Warn("skipped malformed records", zap.String("corpus", s.corpus),
			zap.String("file", s.name), zap.Int("skipped", s.skipped), zap.Int("listed", min(s.skipped, MaxListedBad)))
	}
}

// recordName names record i (0-based, as in the file) with its id when known.
func recordName(i int, id string) string {
	if id == "" {
		return fmt.Sprintf("record %d", i)
	}
	return fmt.Sprintf("record %d (dialogue %s)", i, id)
}

// missing is the problem of a record without a field it needs.
func missing(field string) error { return fmt.Errorf("missing %s", field) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// BadRecords gathers the malformed records a read under SkipBad hears (ReadOptions.Bad = b.Add): the first
// MaxListedBad of them in reading order, and the number of all.
type BadRecords struct {
	First []*RecordError
	Count int
}

// Add takes one malformed record.
func (b *BadRecords) Add(e *RecordError) {
	b.Count++
	if len(b.First) < MaxListedBad {
		b.First = append(b.First, e)
	}
}

// Write lists the records, one a line after indent, and how many more there were.
func (b *BadRecords) Write(w io.Writer, indent string) error {
	for _, e := range b.First {
		if _, err := fmt.Fprintf(w, "%s%v\n", indent, e); err != nil {
			return err
		}
	}
	if more := b.Count - len(b.First); more > 0 {
		if _, err := fmt.Fprintf(w, "%s… and %d more, not listed\n", indent, more); err != nil {
			return err
		}
	}
	return nil
}
