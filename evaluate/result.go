package evaluate

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"convrep/internal/atomicfile"
)

// Row is one number of a table: a metric of one model on one dataset and task, as the mean and population
// std over seeds, with the per-seed values and the settings that produced it.
type Row struct {
	Model   string `json:"model"`
	Dataset string `json:"dataset"`
	Task    string `json:"task"`    // intent, oos, response-selection, ...
	Variant string `json:"variant"` // what sets rows of one task apart: "1-shot", "threshold=mean", "100 candidates"
	Metric  string `json:"metric"`
	// Mean and Std are fractions in [0, 1] (tables print them as percentages).
	Mean     float64        `json:"mean"`
	Std      float64        `json:"std"`
	Seeds    []uint64       `json:"seeds"`
	Values   []float64      `json:"values"` // one per seed, in Seeds' order
	Settings map[string]any `json:"settings,omitempty"`
}

// Result is what one task run writes: its rows and the notes a reader needs (how thresholds were set, how
// many rows were labelled, ...).
type Result struct {
	Model       string   `json:"model"`
	Task        string   `json:"task"`
	Rows        []Row    `json:"rows"`
	Notes       []string `json:"notes,omitempty"`
	WallSeconds float64  `json:"wall_seconds"`
}

// newRow summarises per-seed values into a row.
func newRow(model, dataset, task, variant, metric string, seeds []uint64, values []float64, settings map[string]any) Row {
	m, s := MeanStd(values)
	return Row{Model: model, Dataset: dataset, Task: task, Variant: variant, Metric: metric, Mean: m, Std: s,
		Seeds: append([]uint64(nil), seeds...), Values: values, Settings: settings}
}

// WriteJSON writes r as indented JSON, atomically.
func (r *Result) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}

// ReadResult reads a file WriteJSON wrote.
func ReadResult(path string) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(r.Rows) == 0 {
		return nil, fmt.Errorf("read %s: no rows", path)
	}
	return &r, nil
}

// Markdown writes r as one table per dataset: a line per variant, a column per metric, each cell the mean
// and std over seeds in percent; the notes follow.
func (r *Result) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s: %s\n\n", r.Task, r.Model)
	for _, ds := range uniq(r.Rows, func(x Row) string { return x.Dataset }) {
		rows := filter(r.Rows, func(x Row) bool { return x.Dataset == ds })
		metrics := uniq(rows, func(x Row) string { return x.Metric })
		fmt.Fprintf(&b, "### %s\n\n| variant | %s |\n|---|%s\n", ds, strings.Join(metrics, " | "), strings.Repeat("---|", len(metrics)))
		for _, v := range uniq(rows, func(x Row) string { return x.Variant }) {
			cells := make([]string, len(metrics))
			for i, m := range metrics {
				cells[i] = "–"
				for _, x := range rows {
					if x.Variant == v && x.Metric == m {
						cells[i] = cell(x)
					}
				}
			}
			fmt.Fprintf(&b, "| %s | %s |\n", v, strings.Join(cells, " | "))
		}
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell prints a row's mean ± std in percent, the std left out when only one seed ran.
func cell(x Row) string {
	if len(x.Values) <= 1 {
		return fmt.Sprintf("%.2f", 100*x.Mean)
	}
	return fmt.Sprintf("%.2f ± %.2f", 100*x.Mean, 100*x.Std)
}

// uniq lists the distinct keys of rows in order of first appearance.
func uniq(rows []Row, key func(Row) string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range rows {
		if k := key(x); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func filter(rows []Row, keep func(Row) bool) []Row {
	var out []Row
	for _, x := range rows {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}
