package claims

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// statistics is the report's paragraph on how cells, effect sizes and verdicts are computed; the verbs take
// the large-effect threshold.
const statistics = "**Statistics.** Each seed folder `s<N>` is one trained model; a result row's mean is already " +
	"averaged over the evaluation's sampled splits. A cell is the mean of that row's mean over the n seed folders " +
	"that have it, ± the sample standard deviation (n−1) over them, in percent. With n = 1 (marked †) the ± is that " +
	"one file's std: the spread over the evaluation's sampled splits. The effect size of a comparison is Cohen's " +
	"d = (mean_better − mean_worse) / √((s_better² + s_worse²)/2); with no spread at all it is ±∞, or 0 for equal " +
	"means. \"A > B\" holds when d ≥ %.1f (a large effect, Cohen 1988), does not hold when d ≤ −%.1f, and is " +
	"inconclusive in between (the difference is within the seed spread). \"A >= B\" does not hold when d ≤ −%.1f, " +
	"holds when the difference is ≥ 0, and is inconclusive otherwise. A claim holds when every comparison holds, " +
	"does not hold when every one does not, partly holds when at least one holds, and is inconclusive otherwise; " +
	"it is incomplete while results are missing."

// splitFootnote explains the † of a cell with one seed folder.
const splitFootnote = "† spread over the evaluation's sampled splits, one trained model."

// Markdown writes the report: the header with the statistics, a summary table of the claims, then each
// claim's table of cells, its comparisons and its verdict.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Claims report\n\n")
	fmt.Fprintf(&b, "Generated %s by `%s` from `%s` and the results under `%s`.\n\n",
		r.Generated.UTC().Format("2006-01-02 15:04:05 UTC"), r.Command, r.Spec, r.Runs)
	fmt.Fprintf(&b, statistics+"\n\n", r.LargeEffect, r.LargeEffect, r.LargeEffect)
	b.WriteString("| claim | verdict | comparisons held | seeds per model | wall time |\n|---|---|---|---|---|\n")
	for _, c := range r.Claims {
		seeds := make([]string, len(c.Models))
		for i, m := range c.Models {
			seeds[i] = fmt.Sprintf("%s %d", m.Model, len(m.Seeds))
		}
		fmt.Fprintf(&b, "| %s | %s | %d/%d | %s | %s |\n", esc(c.Title), c.Verdict, c.Held, c.Total,
			esc(strings.Join(seeds, ", ")), c.WallTime)
	}
	for i := range r.Claims {
		b.WriteString("\n")
		claimMarkdown(&b, &r.Claims[i])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// claimMarkdown writes one claim's section.
func claimMarkdown(b *strings.Builder, c *ClaimResult) {
	fmt.Fprintf(b, "## %s\n\n**Claim:** %s\n\n", c.Title, c.Statement)
	if notes := strings.TrimSpace(c.Notes); notes != "" {
		fmt.Fprintf(b, "%s\n\n", notes)
	}
	fmt.Fprintf(b, "| model | %s |\n|---|%s\n", escAll(c.Columns), strings.Repeat("---|", len(c.Columns)))
	dagger := false
	labels := map[string]string{}
	for _, m := range c.Models {
		labels[m.Model] = m.Label
		cells := make([]string, len(m.Cells))
		for i, x := range m.Cells {
			cells[i] = cellText(x)
			dagger = dagger || (x.N == 1 && x.SplitSpread)
		}
		fmt.Fprintf(b, "| %s | %s |\n", esc(m.Label), strings.Join(cells, " | "))
	}
	if dagger {
		fmt.Fprintf(b, "\n%s\n", splitFootnote)
	}
	b.WriteString("\n| better | relation | worse | row | difference (points) | d | verdict |\n|---|---|---|---|---|---|---|\n")
	for _, x := range c.Comparisons {
		diff, d, verdict := "–", "–", string(x.Verdict)
		if x.Verdict == Missing {
			verdict += ": " + strings.Join(x.Missing, "; ")
		} else {
			diff = fmt.Sprintf("%+.2f", 100*x.Difference)
			d = effectText(float64(x.D))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", esc(labels[x.Better]), esc(x.Relation), esc(labels[x.Worse]),
			esc(x.Row), diff, d, esc(verdict))
	}
	fmt.Fprintf(b, "\n**Verdict: %s** (%d of %d comparisons hold). Wall time: %s", c.Verdict, c.Held, c.Total, c.WallTime)
	if c.WallTime.Known {
		fmt.Fprintf(b, " (%d stages in stages.tsv)", c.WallTime.Stages)
	} else {
		b.WriteString(" (no stages.tsv)")
	}
	b.WriteString(".\n")
	if len(c.Missing) > 0 {
		b.WriteString("\nMissing:\n\n")
		for _, m := range c.Missing {
			fmt.Fprintf(b, "- %s\n", m)
		}
	}
}

// cellText is "mean ± std (n=N)" in percent, with † when the spread is the splits'; "–" with no result.
func cellText(x Cell) string {
	if x.N == 0 {
		return "–"
	}
	mark := ""
	if x.SplitSpread {
		mark = "†"
	}
	return fmt.Sprintf("%.2f ± %.2f%s (n=%d)", 100*x.Mean, 100*x.Std, mark, x.N)
}

// effectText is d with 2 decimals, or ∞ and −∞.
func effectText(d float64) string {
	switch {
	case math.IsInf(d, 1):
		return "∞"
	case math.IsInf(d, -1):
		return "−∞"
	}
	return fmt.Sprintf("%.2f", d)
}

// esc keeps a table cell one cell: pipes escaped, line breaks as spaces.
func esc(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

func escAll(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = esc(s)
	}
	return strings.Join(out, " | ")
}
