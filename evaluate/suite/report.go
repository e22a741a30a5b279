package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"convrep/evaluate"
	"convrep/internal/atomicfile"
)

// Report lays the results in files (result JSON files, or folders: their suite.json, else every result file
// in them) side by side, one table per task, as Markdown to output ("": stdout).
func Report(output string, files []string) error {
	var results []*evaluate.Result
	for _, arg := range files {
		files, err := resultFiles(arg)
		if err != nil {
			return err
		}
		for _, f := range files {
			r, err := evaluate.ReadResult(f)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	}
	var b strings.Builder
	if err := evaluate.SideBySide(&b, results); err != nil {
		return err
	}
	if output == "" {
		_, err := os.Stdout.WriteString(b.String())
		return err
	}
	return atomicfile.WriteFile(output, []byte(b.String()))
}

// resultFiles expands a folder into its suite.json, or all its result files.
func resultFiles(arg string) ([]string, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if !st.IsDir() {
		return []string{arg}, nil
	}
	if suite := filepath.Join(arg, "suite.json"); fileExists(suite) {
		return []string{suite}, nil
	}
	files, _ := filepath.Glob(filepath.Join(arg, "*.json"))
	if len(files) == 0 {
		return nil, fmt.Errorf("report: no result files in %s", arg)
	}
	return files, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
