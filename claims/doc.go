// Package claims checks statements from research papers ("DSE > SimCSE > backbone on few-shot intent
// classification") against the results cmd/evaluate wrote for models trained to test them, and writes the
// verdicts as a Markdown report with a JSON copy.
//
// A spec (spec.go) lists the claims: per claim the models, the result rows that make the columns of its table,
// and the comparisons it asserts. The results lie under a runs root as
//
//	<root>/<claim id>/eval/<model>/s<N>/*.json   one cmd/evaluate result file per task, one s<N> per training seed
//	<root>/<claim id>/stages.tsv                 stage<TAB>seconds<TAB>status lines; the claim's wall time is their sum
//
// Statistics (stats.go, verdict.go). A result row's mean is already averaged over the evaluation's own sampled
// splits. For a model and a row, the cell is the mean of that row's mean over the n seed folders that have it,
// and its spread is the sample standard deviation (n−1) over them. With n = 1 (the untrained backbone, an
// ensemble evaluated once) there is no seed spread: the cell's spread is that file's row std, the spread over
// the evaluation's sampled splits, and the report marks it. A comparison "better REL worse" on a row has the
// effect size Cohen's d = (mean_better − mean_worse) / √((s_better² + s_worse²)/2), ±Inf or 0 by the sign of the
// difference when the pooled spread is 0. Relation ">" holds when d ≥ LargeEffect (0.8, a large effect in
// Cohen 1988), does not hold when d ≤ −LargeEffect, and is inconclusive in between (the difference is within
// the seed spread). Relation ">=" does not hold when d ≤ −LargeEffect, holds when the difference is ≥ 0, and is
// inconclusive otherwise. A claim holds when every comparison holds, does not hold when every one does not,
// partly holds when at least one holds, and is inconclusive otherwise; while any model lacks a result it is
// incomplete.
package claims
