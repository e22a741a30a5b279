package evaluate

import (
	"fmt"
	"path/filepath"
)

// SplitIO says where a run's sampled support sets and candidate lists come from and go to: read from the
// folder Read when set (--splits), else drawn with the seed; and saved to the folder Write when set
// (--write-splits), so that another tool, or a later run, evaluates on the very same episodes.
type SplitIO struct {
	Read, Write string
}

// Support returns the k-shot support sets of one seed: read, or drawn with SampleSupport; saved when asked.
func (io SplitIO) Support(dataset, task, source string, train Split, k int, seed uint64) ([]Support, error) {
	read := func() ([]Support, error) {
		sf, err := ReadSupportFile(filepath.Join(io.Read, SplitFileName(dataset, task, k, seed)), train)
		if err != nil {
			return nil, err
		}
		if sf.K != k || sf.Seed != seed {
			return nil, fmt.Errorf("split file for %s %s k=%d seed=%d holds k=%d seed=%d", dataset, task, k, seed, sf.K, sf.Seed)
		}
		return sf.Support, nil
	}
	draw := func() ([]Support, error) { return SampleSupport(train, k, seed) }
	file := func(sets []Support) *SplitFile {
		return &SplitFile{Task: task, Dataset: dataset, Source: source, Rows: len(train), K: k, Seed: seed,
			Derivation: SupportDerivation, Support: sets}
	}
	return readOrDraw(io, read, draw, file)
}

// candidates returns the candidate lists of one seed.
func (io SplitIO) candidates(dataset, task, source string, responses []string, size int, seed uint64) ([]Candidates, error) {
	read := func() ([]Candidates, error) {
		path := filepath.Join(io.Read, SplitFileName(dataset, task, size, seed))
		sf, err := ReadCandidateFile(path, len(responses))
		if err != nil {
			return nil, err
		}
		if sf.Seed != seed {
			return nil, fmt.Errorf("read %s: holds seed %d, want %d", path, sf.Seed, seed)
		}
		for i, c := range sf.Candidates {
			if len(c.Rows) != size {
				return nil, fmt.Errorf("read %s: candidates[%d] has %d rows, want %d", path, i, len(c.Rows), size)
			}
		}
		return sf.Candidates, nil
	}
	draw := func() ([]Candidates, error) { return SampleCandidates(responses, size, seed) }
	file := func(lists []Candidates) *SplitFile {
		return &SplitFile{Task: task, Dataset: dataset, Source: source, Rows: len(responses), K: size, Seed: seed,
			Derivation: CandidateDerivation, Candidates: lists}
	}
	return readOrDraw(io, read, draw, file)
}

// readOrDraw reads the episodes from io.Read when it is set, else draws them; and writes them, as file makes
// their split file, into io.Write when that is set.
func readOrDraw[T any](io SplitIO, read, draw func() (T, error), file func(T) *SplitFile) (T, error) {
	get := draw
	if io.Read != "" {
		get = read
	}
	v, err := get()
	if err != nil {
		var zero T
		return zero, err
	}
	if io.Write != "" {
		if _, err := WriteSplitFile(io.Write, file(v)); err != nil {
			var zero T
			return zero, err
		}
	}
	return v, nil
}
