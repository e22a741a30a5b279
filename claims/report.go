package claims

import (
	"fmt"
	"path/filepath"
	"time"
)

// Report is the verdict on every claim of a spec, with the numbers behind it; report.json holds it as is.
type Report struct {
	Generated   time.Time     `json:"generated"`
	Command     string        `json:"command"`
	Spec        string        `json:"spec"`
	Runs        string        `json:"runs"`
	LargeEffect float64       `json:"large_effect"` // the |d| a verdict needs
	Claims      []ClaimResult `json:"claims"`
}

// ClaimResult is one claim's table, comparisons and verdict.
type ClaimResult struct {
	ID          string        `json:"id"`
	Title       string        `json:"title"`
	Statement   string        `json:"statement"`
	Notes       string        `json:"notes,omitempty"`
	Verdict     Verdict       `json:"verdict"`
	Held        int           `json:"held"`        // comparisons that hold
	Total       int           `json:"comparisons"` // comparisons in all
	WallTime    WallTime      `json:"wall_time"`
	Columns     []string      `json:"columns"` // the rows' labels, in order
	Models      []ModelResult `json:"models"`
	Comparisons []Comparison  `json:"comparison_results"`
	Missing     []string      `json:"missing,omitempty"` // what results the verdict still waits for, once each
}

// ModelResult is a model's line of a claim's table.
type ModelResult struct {
	Model  string   `json:"model"`
	Label  string   `json:"label"`
	Folder string   `json:"folder"`
	Seeds  []string `json:"seeds"` // seed folders with at least one result file
	Cells  []Cell   `json:"cells"` // one per column
}

// Cell is a model's number on one row.
type Cell struct {
	Row string `json:"row"`
	Summary
	Seeds  []string  `json:"seeds,omitempty"`  // the seed folders that have the row
	Values []float64 `json:"values,omitempty"` // their row means, in Seeds' order
	// Missing says why there is no number (N = 0): which folder lacks what.
	Missing string `json:"missing,omitempty"`
}

// Comparison is one asserted relation on one row. Difference (a fraction, better − worse) and D mean
// nothing when Verdict is Missing.
type Comparison struct {
	Better     string   `json:"better"`
	Relation   string   `json:"relation"`
	Worse      string   `json:"worse"`
	Row        string   `json:"row"`
	Difference float64  `json:"difference"`
	D          Effect   `json:"d"`
	Verdict    Verdict  `json:"verdict"`
	Missing    []string `json:"missing,omitempty"`
}

// Options are what a report records about how it was made.
type Options struct {
	Runs      string    // the runs root
	Command   string    // the command line that made it
	Generated time.Time // when
}

// Build reads every claim's results under opts.Runs and decides the comparisons. Missing results make
// missing cells and an incomplete claim, not an error; unreadable or ambiguous ones are errors naming the
// file.
func Build(spec *Spec, opts Options) (*Report, error) {
	r := &Report{Generated: opts.Generated, Command: opts.Command, Spec: spec.Path, Runs: opts.Runs, LargeEffect: LargeEffect}
	for i := range spec.Claims {
		cr, err := buildClaim(&spec.Claims[i], filepath.Join(opts.Runs, spec.Claims[i].ID))
		if err != nil {
			return nil, err
		}
		r.Claims = append(r.Claims, *cr)
	}
	return r, nil
}

// buildClaim reads one claim's folder.
func buildClaim(c *Claim, dir string) (*ClaimResult, error) {
	wall, err := ReadWallTime(filepath.Join(dir, "stages.tsv"))
	if err != nil {
		return nil, err
	}
	cr := &ClaimResult{ID: c.ID, Title: c.HeadingTitle(), Statement: c.Statement, Notes: c.Notes, WallTime: wall}
	for _, row := range c.Rows {
		cr.Columns = append(cr.Columns, row.Name())
	}
	cells := map[string]map[string]Cell{} // model, row label
	for _, m := range c.Models {
		from := dir
		if other, ok := c.Results[m]; ok {
			from = filepath.Join(filepath.Dir(dir), other)
		}
		mr, err := buildModel(c, m, filepath.Join(from, "eval", m))
		if err != nil {
			return nil, err
		}
		cells[m] = map[string]Cell{}
		for _, cell := range mr.Cells {
			cells[m][cell.Row] = cell
		}
		cr.Models = append(cr.Models, *mr)
	}
	var verdicts []Verdict
	seenMissing := map[string]bool{}
	for _, cmp := range c.Compares {
		for _, row := range c.CompareRows(cmp) {
			b, w := cells[cmp.Better][row.Name()], cells[cmp.Worse][row.Name()]
			res := Comparison{Better: cmp.Better, Relation: cmp.Relation, Worse: cmp.Worse, Row: row.Name()}
			for _, x := range []Cell{b, w} {
				if x.N == 0 {
					res.Missing = append(res.Missing, x.Missing)
					if !seenMissing[x.Missing] {
						seenMissing[x.Missing] = true
						cr.Missing = append(cr.Missing, x.Missing)
					}
				}
			}
			if len(res.Missing) > 0 {
				res.Verdict = Missing
			} else {
				res.Difference = b.Mean - w.Mean
				d := CohenD(b.Summary, w.Summary)
				res.D = Effect(d)
				res.Verdict = Judge(cmp.Relation, res.Difference, d)
			}
			verdicts = append(verdicts, res.Verdict)
			cr.Comparisons = append(cr.Comparisons, res)
		}
	}
	cr.Verdict, cr.Held = Aggregate(verdicts)
	cr.Total = len(verdicts)
	return cr, nil
}

// buildModel reads a model's seed folders and summarises each of the claim's rows over them.
func buildModel(c *Claim, model, dir string) (*ModelResult, error) {
	seeds, err := ReadModel(dir)
	if err != nil {
		return nil, err
	}
	mr := &ModelResult{Model: model, Label: c.ModelLabel(model), Folder: dir, Seeds: []string{}}
	for _, s := range seeds {
		if s.Files > 0 {
			mr.Seeds = append(mr.Seeds, s.Name)
		}
	}
	for _, row := range c.Rows {
		cell := Cell{Row: row.Name()}
		var splitStd float64
		for _, s := range seeds {
			x, ok, err := s.Lookup(row.Key())
			if err != nil {
				return nil, err
			}
			if ok {
				cell.Seeds = append(cell.Seeds, s.Name)
				cell.Values = append(cell.Values, x.Mean)
				splitStd = x.Std
			}
		}
		cell.Summary = Summarize(cell.Values, splitStd)
		if cell.N == 0 {
			cell.Missing = missingReason(model, dir, row, seeds, mr.Seeds)
		}
		mr.Cells = append(mr.Cells, cell)
	}
	return mr, nil
}

// missingReason says which folder lacks what.
func missingReason(model, dir string, row Row, seeds []Seed, withResults []string) string {
	switch {
	case len(seeds) == 0:
		return fmt.Sprintf("%s: no results yet: no seed folder s<N> in %s", model, dir)
	case len(withResults) == 0:
		return fmt.Sprintf("%s: no result files yet in %s/s*/", model, dir)
	}
	return fmt.Sprintf("%s: no row %q in %s/s*/*.json", model, row.Key(), dir)
}
