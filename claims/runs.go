package claims

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"convrep/evaluate"
)

// Key names a row of cmd/evaluate's result files.
type Key struct {
	Task, Dataset, Variant, Metric string
}

// String is the key as people read it: "intent clinc150 1-shot accuracy" (no variant when it has none).
func (k Key) String() string {
	parts := []string{k.Task, k.Dataset, k.Variant, k.Metric}
	return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), " ")
}

func rowKey(r evaluate.Row) Key {
	return Key{Task: r.Task, Dataset: r.Dataset, Variant: r.Variant, Metric: r.Metric}
}

// Seed is one training run of a model: the rows of the result files in its folder s<N>.
type Seed struct {
	Name  string // "s0"
	Dir   string
	Files int             // result files read
	Rows  map[Key][]Found // a key found in more than one file is ambiguous (Lookup says so)
}

// Found is a result row and the file it came from.
type Found struct {
	Row  evaluate.Row
	File string
}

// Lookup finds the row of key in the seed: ok false when no file has it, an error naming the files when
// more than one has.
func (s Seed) Lookup(key Key) (row evaluate.Row, ok bool, err error) {
	found := s.Rows[key]
	switch len(found) {
	case 0:
		return evaluate.Row{}, false, nil
	case 1:
		return found[0].Row, true, nil
	}
	files := make([]string, len(found))
	for i, f := range found {
		files[i] = f.File
	}
	return evaluate.Row{}, false, fmt.Errorf("%s: row %q is in %d files: %s", s.Dir, key, len(found), strings.Join(files, ", "))
}

// seedName is a seed folder's name: s and the training seed.
var seedName = regexp.MustCompile(`^s([0-9]+)$`)

// ReadModel reads a model's seed folders dir/s<N>, in the order of N. A dir that does not exist yet gives
// no seeds and no error (the model has not been evaluated yet). Files in dir are ignored; a folder that is
// not named s<N> is an error, as is a result file that cannot be read.
func ReadModel(dir string) ([]Seed, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read model results: %w", err)
	}
	type numbered struct {
		n    uint64
		name string
	}
	var seeds []numbered
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		m := seedName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("%s: folder %q is not a seed folder (want s<N>, such as s0)", dir, e.Name())
		}
		n, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: folder %q: seed %s is out of range", dir, e.Name(), m[1])
		}
		seeds = append(seeds, numbered{n, e.Name()})
	}
	slices.SortFunc(seeds, func(a, b numbered) int {
		switch {
		case a.n < b.n:
			return -1
		case a.n > b.n:
			return 1
		}
		return strings.Compare(a.name, b.name) // s1 and s01
	})
	out := make([]Seed, 0, len(seeds))
	for _, s := range seeds {
		seed, err := ReadSeed(filepath.Join(dir, s.name))
		if err != nil {
			return nil, err
		}
		out = append(out, seed)
	}
	return out, nil
}

// ReadSeed reads every *.json result file of a seed folder, in name order, except suite.json (cmd/evaluate
// suite's copy of the other files' rows) and hidden files (an unfinished atomic write). Each must be a
// cmd/evaluate result with rows; one that is not is an error naming it.
func ReadSeed(dir string) (Seed, error) {
	s := Seed{Name: filepath.Base(dir), Dir: dir, Rows: map[Key][]Found{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return s, fmt.Errorf("read seed results: %w", err)
	}
	for _, e := range entries { // ReadDir sorts by name
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") || name == "suite.json" || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		r, err := evaluate.ReadResult(path)
		if err != nil {
			return s, err
		}
		s.Files++
		for _, row := range r.Rows {
			k := rowKey(row)
			s.Rows[k] = append(s.Rows[k], Found{Row: row, File: path})
		}
	}
	return s, nil
}

// WallTime is a claim's time from its stages.tsv.
type WallTime struct {
	Known   bool    `json:"known"` // false: no stages.tsv
	Seconds float64 `json:"seconds"`
	Stages  int     `json:"stages"`
}

// ReadWallTime sums the seconds of a stages.tsv, whose lines are stage<TAB>seconds<TAB>status (blank lines
// are skipped). A missing file is an unknown wall time; a malformed line is an error naming the file and
// the line.
func ReadWallTime(path string) (WallTime, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return WallTime{}, nil
	}
	if err != nil {
		return WallTime{}, fmt.Errorf("read stages: %w", err)
	}
	defer f.Close()
	w := WallTime{Known: true}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		fields := strings.Split(text, "\t")
		if len(fields) != 3 {
			return WallTime{}, fmt.Errorf("%s:%d: want stage<TAB>seconds<TAB>status, got %d field(s) in %q", path, line, len(fields), text)
		}
		sec, err := strconv.ParseFloat(strings.TrimSpace(fields[1]), 64)
		if err != nil || sec < 0 || math.IsInf(sec, 0) || math.IsNaN(sec) {
			return WallTime{}, fmt.Errorf("%s:%d: seconds %q is not a number ≥ 0", path, line, fields[1])
		}
		w.Seconds += sec
		w.Stages++
	}
	if err := sc.Err(); err != nil {
		return WallTime{}, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

// String is the wall time as h:mm:ss, or "unknown".
func (w WallTime) String() string {
	if !w.Known {
		return "unknown"
	}
	s := int64(math.Round(w.Seconds))
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}
