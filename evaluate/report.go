package evaluate

import (
	"fmt"
	"io"
	"strings"
)

// SideBySide writes one Markdown table per task with a row per model and a column per dataset, variant and
// metric (in order of first appearance), as the papers lay out their tables; a task with more than maxColumns
// such columns gets a table per dataset and variant instead. Cells are mean ± std in percent;
// a model without a number for a column gets "–". The notes of all results follow, once each.
func SideBySide(w io.Writer, results []*Result) error {
	if len(results) == 0 {
		return fmt.Errorf("report: no results")
	}
	var rows []Row
	var notes []string
	seenNote := map[string]bool{}
	for _, r := range results {
		rows = append(rows, r.Rows...)
		for _, n := range r.Notes {
			if !seenNote[n] && !strings.HasPrefix(n, "Wall time") {
				seenNote[n] = true
				notes = append(notes, n)
			}
		}
	}
	var b strings.Builder
	for _, task := range uniq(rows, func(x Row) string { return x.Task }) {
		tr := filter(rows, func(x Row) bool { return x.Task == task })
		if len(uniq(tr, fullColumn)) <= maxColumns {
			table(&b, task, tr, fullColumn)
			continue
		}
		// Too wide to read: one table per dataset and variant, a column per metric.
		for _, group := range uniq(tr, func(x Row) string { return x.Dataset + " " + x.Variant }) {
			gr := filter(tr, func(x Row) bool { return x.Dataset+" "+x.Variant == group })
			table(&b, task+": "+group, gr, func(x Row) string { return x.Metric })
		}
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxColumns is the widest table SideBySide prints before splitting a task by dataset and variant.
const maxColumns = 8

func fullColumn(x Row) string { return x.Dataset + " " + x.Variant + " " + x.Metric }

// table writes one Markdown table: a row per model, a column per distinct column(x).
func table(b *strings.Builder, title string, rows []Row, column func(Row) string) {
	cols := uniq(rows, column)
	fmt.Fprintf(b, "### %s\n\n| model | %s |\n|---|%s\n", title, strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
	for _, model := range uniq(rows, func(x Row) string { return x.Model }) {
		cells := make([]string, len(cols))
		for i, col := range cols {
			cells[i] = "–"
			for _, x := range rows {
				if x.Model == model && column(x) == col {
					cells[i] = cell(x)
				}
			}
		}
		fmt.Fprintf(b, "| %s | %s |\n", model, strings.Join(cells, " | "))
	}
	b.WriteString("\n")
}
