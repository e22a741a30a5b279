// Package buckets draws the negative candidates of MGT ("Multi-Granularity Representations of Dialog",
// Mehri and Eskenazi 2019, §3.3) and of its baselines from the response pool R of the training set.
//
// The pool is embedded once by a frozen encoder (EmbedTokens: batched, rows sorted by length to spare
// padding) and kept on disk (SaveMatrix / LoadMatrix, keyed by a digest of the model and the data). Build
// then places, for each training example, the other responses into L segments by cosine similarity to the
// ground truth (Eq. 9-12; segment 1 holds the closest) and draws k−1 negatives from each segment.
//
// Scale: Eq. 12 cuts each row D_i of the |R|×|R| similarity matrix at its (|R|·l/L)-th values. Computing
// the rows, even one at a time, costs O(|R|²·d) time over the training set. Build estimates the cut points
// from a uniform sample of S responses per example instead (S = bucket_sample, 1000 by default): it scores
// the sample (S·d), sorts those S scores (S log S) and cuts the sample into L equal parts. A segment of the
// sample is then a uniform sample of the true segment P^l_i up to the boundary error of S-sample quantiles
// (about sqrt(l/L·(1−l/L)/S), 1.3 points of rank at S = 1000), so its k−1 negatives are uniform draws from
// P^l_i (Eq. 12's N^l_ij ~ Uniform(P^l_i)). Time is O(N·S·d), linear in the number of examples N and free
// of |R|; memory is the pool (|R|·d float32), S scores per worker and the negatives (N·L·(k−1) int32). No
// |R|×|R| matrix is ever formed. When |R|−1 ≤ S every other response is scored, which is Eq. 12 exactly.
//
// All draws come from generators seeded by (seed, stream, example), so the negatives do not depend on the
// number of workers or on the order in which examples are processed.
package buckets
