package sets

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"convrep/evaluate"
)

// openMaybeGzip opens path and, when its name ends in .gz, decompresses it; the closer closes both.
func openMaybeGzip(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err // *fs.PathError: "open PATH: no such file or directory" names the path once
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, f.Close, nil
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("read %s: gzip: %w", path, err)
	}
	return z, func() error { z.Close(); return f.Close() }, nil
}

// readJSONFile decodes the whole of a .json or .json.gz file into v.
func readJSONFile(path string, v any) error {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return err
	}
	defer closeFn()
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return fmt.Errorf("read %s: file is empty", path)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// pairsToSplit turns upstream [[text, label], ...] rows into a Split, naming the bad row on error.
func pairsToSplit(path, name string, rows [][]string) (evaluate.Split, error) {
	out := make(evaluate.Split, len(rows))
	for i, r := range rows {
		if len(r) != 2 {
			return nil, fmt.Errorf("read %s: %s row %d: want [text, label], got %d fields", path, name, i, len(r))
		}
		out[i] = evaluate.Example{Text: r[0], Label: r[1]}
	}
	return out, nil
}
