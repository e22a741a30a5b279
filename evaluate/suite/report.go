package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/internal/atomicfile"
)

func init() {
	Register(Task{Name: "report", Section: Results,
		Summary:  "lay the results of several models side by side, like the papers' tables",
		Synopsis: "[--output table.md] RESULT.json|DIR ...",
		About: "Lays the results of several models side by side, one table per task like the papers' tables: a row per model, a\n" +
			"column per dataset, variant and metric, cells mean ± std over seeds in percent. A folder stands for its suite.json,\n" +
			"or for every result file in it.",
		Data: "result files written by the other tasks",
		New:  func() Options { return new(ReportOptions) }})
}

// ReportOptions are evaluate report's settings.
type ReportOptions struct {
	Output string   // the Markdown's file ("": stdout)
	Files  []string // result JSON files, or folders: their suite.json, else every result file in them
}

// Flags declares evaluate report's flags; its arguments are the result files.
func (o *ReportOptions) Flags(f *Flags) {
	f.StringVar(&o.Output, "output", "", "write the Markdown here (default stdout)")
	f.Args(&o.Files)
}

// Run lays the results in the files side by side, one table per task, as Markdown.
func (o *ReportOptions) Run(context.Context, *zap.Logger) error {
	output, files := o.Output, o.Files
	if len(files) == 0 {
		return fmt.Errorf("name at least one result file or folder (see --help)")
	}
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
