// Package tsne maps embeddings to two dimensions with Barnes-Hut t-SNE and draws them as a scatter plot
// coloured by label, for the DSE paper's Figure 1 (CLINC150 test queries by intent, out-of-scope in black).
//
// The algorithm is van der Maaten's Barnes-Hut t-SNE (JMLR 2014, "Accelerating t-SNE using Tree-Based
// Algorithms"): optional PCA first (50 dimensions by default, gonum's symmetric eigensolver), input
// affinities from the exact 3·perplexity nearest neighbours with a per-point bisection on the Gaussian
// precision (van der Maaten & Hinton 2008), symmetrised into a sparse P; repulsion summarised by a quadtree
// whose cells stand for their points when diagonal/distance < theta; gradient descent with early
// exaggeration (12 for the first quarter of the run, at most 250 iterations), momentum 0.5 then 0.8, and
// per-coordinate gains. The step is max(200, n/12) (Belkina et al. 2019), on the gradient without its
// factor 4, as in bhtsne and openTSNE.
//
// Why our own code: the Go t-SNE libraries found were not adequate. github.com/danaugrs/go-tsne (no tagged
// release, last change 2020) is exact t-SNE over dense n×n gonum matrices: at 5,500 points one iteration
// took 4 to 6 s and 3.8 GB of memory on our 2-core machine (over an hour for 1,000 iterations), and its gradient is never
// reset between iterations, so each step adds every earlier gradient; it has no early exaggeration,
// momentum or gains, draws from the global math/rand and panics on bad input. sacado/tsne4go (a port of
// tsnejs, also exact O(n²)) is not served as a Go module. Barnes-Hut makes each iteration O(n log n).
//
// Results depend only on the input, the Options and Options.Seed: work is split across goroutines by point
// and every sum is taken in a fixed order.
package tsne
