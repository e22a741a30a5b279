package evaluate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// SplitFile is one saved draw: the support sets of one task, k and seed, or the candidate lists of one
// response-selection task and seed. Rows are 0-based indices into the split named by Source (for support
// sets, the training split; for candidates, the pairs of the AmazonQA file), so another tool can rebuild the
// same episodes from the upstream files.
type SplitFile struct {
	Task       string       `json:"task"`        // e.g. "intent", "oos", "response-selection"
	Dataset    string       `json:"dataset"`     // e.g. "clinc150", "snips", "amazonqa", or a user file
	Source     string       `json:"source"`      // the file and split the rows index, e.g. "data/data_full.json#train"
	Rows       int          `json:"rows"`        // how many rows the source had when the split was drawn
	K          int          `json:"k,omitempty"` // shots per label, or candidates per list
	Seed       uint64       `json:"seed"`        // the seed given to SampleSupport or SampleCandidates
	Derivation string       `json:"derivation"`  // how the rows were drawn, in words
	Support    []Support    `json:"support,omitempty"`
	Candidates []Candidates `json:"candidates,omitempty"`
}

// Derivation texts stored in split files, so that a file explains itself.
const (
	SupportDerivation = "math/rand/v2 NewPCG(seed, 0x636f6e7672657031); per label in order of first appearance in the source: " +
		"partial Fisher-Yates over the label's rows in file order (i=0..m-1: swap i with i+Uint64()%(n-i)), m=min(2k,n); keep the first min(k,m)"
	CandidateDerivation = "math/rand/v2 NewPCG(seed, 0x636f6e7672657032); per query in file order: partial Fisher-Yates (as for support sets) " +
		"drawing size-1 of the rows whose answer text differs from the query's, in file order; then the query's row is inserted at Uint64()%size"
)

// SplitFileName is the file name under a --write-splits folder: one file per dataset, task, k (shots, or
// candidates per list) and seed.
func SplitFileName(dataset, task string, k int, seed uint64) string {
	if k > 0 {
		return fmt.Sprintf("%s-%s-k%d-seed%d.json", dataset, task, k, seed)
	}
	return fmt.Sprintf("%s-%s-seed%d.json", dataset, task, seed)
}

// WriteSplitFile writes sf as indented JSON to dir/SplitFileName(...) and returns the path written.
func WriteSplitFile(dir string, sf *SplitFile) (string, error) {
	path := filepath.Join(dir, SplitFileName(sf.Dataset, sf.Task, sf.K, sf.Seed))
	data, err := json.MarshalIndent(sf, "", " ")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// ReadSupportFile reads a split file of support sets and checks it against train: the row count matches,
// every row is in range, carries its entry's label, and appears once.
func ReadSupportFile(path string, train Split) (*SplitFile, error) {
	sf, err := readSplitFile(path, len(train))
	if err != nil {
		return nil, err
	}
	if len(sf.Support) == 0 {
		return nil, fmt.Errorf("read %s: no support sets", path)
	}
	seen := map[int]bool{}
	for li, s := range sf.Support {
		if len(s.Rows) == 0 {
			return nil, fmt.Errorf("read %s: support[%d] (label %q) is empty", path, li, s.Label)
		}
		for _, r := range s.Rows {
			if r < 0 || r >= len(train) {
				return nil, fmt.Errorf("read %s: support[%d] (label %q): row %d is out of range [0, %d)", path, li, s.Label, r, len(train))
			}
			if train[r].Label != s.Label {
				return nil, fmt.Errorf("read %s: support[%d]: row %d has label %q, want %q", path, li, r, train[r].Label, s.Label)
			}
			if seen[r] {
				return nil, fmt.Errorf("read %s: support[%d] (label %q): row %d appears twice", path, li, s.Label, r)
			}
			seen[r] = true
		}
	}
	return sf, nil
}

// ReadCandidateFile reads a split file of candidate lists and checks it against the n pairs read: every row in
// range, no row twice in a list, and the query's own row at position Answer.
func ReadCandidateFile(path string, n int) (*SplitFile, error) {
	sf, err := readSplitFile(path, n)
	if err != nil {
		return nil, err
	}
	if len(sf.Candidates) == 0 {
		return nil, fmt.Errorf("read %s: no candidate lists", path)
	}
	for ci, c := range sf.Candidates {
		if c.Query < 0 || c.Query >= n {
			return nil, fmt.Errorf("read %s: candidates[%d]: query row %d is out of range [0, %d)", path, ci, c.Query, n)
		}
		seen := map[int]bool{}
		for _, r := range c.Rows {
			if r < 0 || r >= n {
				return nil, fmt.Errorf("read %s: candidates[%d]: row %d is out of range [0, %d)", path, ci, r, n)
			}
			if seen[r] {
				return nil, fmt.Errorf("read %s: candidates[%d]: row %d appears twice", path, ci, r)
			}
			seen[r] = true
		}
		if c.Answer < 0 || c.Answer >= len(c.Rows) || c.Rows[c.Answer] != c.Query {
			return nil, fmt.Errorf("read %s: candidates[%d]: position %d does not hold the query's row %d", path, ci, c.Answer, c.Query)
		}
	}
	return sf, nil
}

func readSplitFile(path string, rows int) (*SplitFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read split file: %w", err)
	}
	var sf SplitFile
	if err := json.Unmarshal(data, &sf); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if sf.Rows != rows {
		return nil, fmt.Errorf("read %s: drawn from %d rows of %s, but the data read have %d", path, sf.Rows, sf.Source, rows)
	}
	return &sf, nil
}
