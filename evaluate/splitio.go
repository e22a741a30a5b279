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
	var sets []Support
	if io.Read != "" {
		sf, err := ReadSupportFile(filepath.Join(io.Read, SplitFileName(dataset, task, k, seed)), train)
		if err != nil {
			return nil, err
		}
		if sf.K != k || sf.Seed != seed {
			return nil, fmt.Errorf("split file for %s %s k=%d seed=%d holds k=%d seed=%d", dataset, task, k, seed, sf.K, sf.Seed)
		}
		sets = sf.Support
	} else {
		var err error
		if sets, err = SampleSupport(train, k, seed); err != nil {
			return nil, err
		}
	}
	if io.Write != "" {
		sf := &SplitFile{Task: task, Dataset: dataset, Source: source, Rows: len(train), K: k, Seed: seed,
			Derivation: SupportDerivation, Support: sets}
		if _, err := WriteSplitFile(io.Write, sf); err != nil {
			return nil, err
		}
	}
	return sets, nil
}

// candidates returns the candidate lists of one seed.
func (io SplitIO) candidates(dataset, task, source string, responses []string, size int, seed uint64) ([]Candidates, error) {
	var lists []Candidates
	if io.Read != "" {
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
		lists = sf.Candidates
	} else {
		var err error
		if lists, err = SampleCandidates(responses, size, seed); err != nil {
			return nil, err
		}
	}
	if io.Write != "" {
		sf := &SplitFile{Task: task, Dataset: dataset, Source: source, Rows: len(responses), K: size, Seed: seed,
			Derivation: CandidateDerivation, Candidates: lists}
		if _, err := WriteSplitFile(io.Write, sf); err != nil {
			return nil, err
		}
	}
	return lists, nil
}
