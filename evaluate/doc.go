// Package evaluate holds the model-free groundwork of convrep's evaluation suite (DSE §4.2 and Appendix B):
// the data types every task measures (Split, RetrievalSet, SRPool; package evaluate/sets reads the evaluation
// sets into them); seeded sampling of few-shot support sets and of k-to-100 response-selection candidate
// lists, saved to and read from JSON so that another tool can reproduce the numbers; the protocols (prototypes,
// out-of-scope detection, response selection and its ensembles, semantic retrieval) over an Encoder; and the
// metrics (accuracy, out-of-scope detection, Top-k and MRR, F1, mean and std over seeds) and the results' JSON
// and Markdown.
//
// Every row index in this package is 0-based into the split or file it was read from, in file order.
package evaluate
