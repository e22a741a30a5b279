// Package evaluate holds the model-free groundwork of convrep's evaluation suite (DSE §4.2 and Appendix B):
// readers of the evaluation sets in their upstream layouts (CLINC150, SNIPS, AmazonQA) and of a user's CSV or
// JSON lines file; seeded sampling of few-shot support sets and of k-to-100 response-selection candidate lists,
// saved to and read from JSON so that another tool can reproduce the numbers; and the metrics (accuracy,
// prototype assignment, out-of-scope detection, Top-k and MRR, mean and std over seeds).
//
// Every row index in this package is 0-based into the split or file it was read from, in file order.
package evaluate
