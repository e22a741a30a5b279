package evaluate

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// prototypes returns one prototype per label (labels' order): the mean of the label's normalised support
// embeddings, left unnormalised. DSE §4.2 (Intent Classification) says: "we calculate a prototype embedding
// for each category by averaging the embedding of all the training samples that belong to this category";
// that the averaged embeddings are L2-normalised first, and the mean is not normalised again, is the authors'
// code (amazon-research/dse, evaluate/run_similarity.py, eval_intent_classification_with_prototypical_net:
// normalize(support_embedding), then .mean(axis=0) per category). A label without support rows gets NaNs, so
// no query is ever assigned to it (the authors' code gives it zeros instead: see zeroMissing).
func prototypes(labels []string, sets []Support, emb map[int][]float32, dim int) [][]float32 {
	rowsOf := map[string][]int{}
	for _, s := range sets {
		rowsOf[s.Label] = append(rowsOf[s.Label], s.Rows...)
	}
	out := make([][]float32, len(labels))
	for i, l := range labels {
		p := make([]float32, dim)
		rows := rowsOf[l]
		if len(rows) == 0 {
			for j := range p {
				p[j] = float32(math.NaN())
			}
			out[i] = p
			continue
		}
		acc := make([]float64, dim)
		for _, r := range rows {
			for j, x := range emb[r] {
				acc[j] += float64(x)
			}
		}
		for j := range p {
			p[j] = float32(acc[j] / float64(len(rows)))
		}
		out[i] = p
	}
	return out
}

// similarities returns the dot products of every query with every prototype, [queries][prototypes], as one
// matrix product (gonum's blocked, parallel Sgemm: 5,500 queries × 150 prototypes × 768 dims is 630M
// multiply-adds per episode).
func similarities(queries, protos [][]float32) [][]float64 {
	if len(queries) == 0 || len(protos) == 0 {
		return make([][]float64, len(queries))
	}
	dim := len(queries[0])
	q := blas32.General{Rows: len(queries), Cols: dim, Stride: dim, Data: flatten(queries, dim)}
	p := blas32.General{Rows: len(protos), Cols: dim, Stride: dim, Data: flatten(protos, dim)}
	c := blas32.General{Rows: len(queries), Cols: len(protos), Stride: len(protos), Data: make([]float32, len(queries)*len(protos))}
	blas32.Gemm(blas.NoTrans, blas.Trans, 1, q, p, 0, c)
	out := make([][]float64, len(queries))
	for i := range out {
		row := make([]float64, len(protos))
		for j := range row {
			row[j] = float64(c.Data[i*len(protos)+j])
		}
		out[i] = row
	}
	return out
}

func flatten(rows [][]float32, dim int) []float32 {
	out := make([]float32, 0, len(rows)*dim)
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// zeroMissing replaces the NaN prototype of a label without support rows by zeros, in place, as the authors'
// code does (np.zeros([hidden_size]) in eval_out_of_scope_detection): its similarity to every query is then 0.
func zeroMissing(protos [][]float32) {
	for _, p := range protos {
		if len(p) > 0 && math.IsNaN(float64(p[0])) {
			for j := range p {
				p[j] = 0
			}
		}
	}
}
