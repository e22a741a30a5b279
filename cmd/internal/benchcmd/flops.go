package benchcmd

// Model FLOPs utilisation (MFU, PaLM §4.1 and Appendix B): the FLOPs the model's math needs per second,
// divided by the hardware's peak. Rematerialisation and other implementation work do not count, so two
// implementations of the same step are compared on the same footing.
//
// FLOPs of one training step per sentence of T tokens, forward and backward (backward = 2 × forward),
// for an encoder of L layers, hidden size H and feed-forward size I:
//
//	6·N·T + 12·L·H·T²,  N = L·(4H² + 2HI)
//
// N counts the weights of the matmuls every token goes through: the query, key, value and output
// projections (4H²) and the two feed-forward matrices (2HI) of each layer; each weight costs 2 FLOPs per
// token forward and 4 backward. The second term is attention's own matmuls, q·kᵀ and probs·v, 2·T·H FLOPs
// each per token and layer forward, ×3 with backward (PaLM's 12·L·H·Q·T per token with heads·Q = H; the
// encoder attends over all T keys). The word, position and type embeddings are table look-ups, not matmuls,
// and are left out, as are biases, LayerNorm, the activation, softmax and dropout (O(1) per element), as in
// Chinchilla's Appendix F. DSE's contrast head (H² + 128H per sentence, not per token) and the in-batch
// similarity matrix (2B×2B×128) together add under 0.1% at BERT-base shape and are left out too.
// A pair is two sentences (x_i and x_i+), so a pair costs twice the sentence's FLOPs.
func flopsPerPair(layers, hidden, intermediate, seq int64) float64 {
	l, h, i, t := float64(layers), float64(hidden), float64(intermediate), float64(seq)
	n := l * (4*h*h + 2*h*i)
	perSentence := 6*n*t + 12*l*h*t*t
	return 2 * perSentence
}

// Peak dense throughput of one H100 SXM or H200 SXM (the same GPU die and clocks), in TFLOP/s, from
// NVIDIA's data sheets: bf16 on tensor cores, and fp32 on CUDA cores. libtorch leaves TF32 off for matmuls
// by default (torch.backends.cuda.matmul.allow_tf32 = False), so an fp32 step is bounded by the fp32 figure
// (TF32 tensor cores would give 495).
const (
	peakBF16H100 = 989.0
	peakFP32H100 = 67.0
)

// defaultPeak is the peak --peak-tflops falls back to: the H100/H200 figures on a GPU, none on a CPU (MFU
// is then not reported).
func defaultPeak(cuda bool, precision string) float64 {
	switch {
	case !cuda:
		return 0
	case precision == bf16:
		return peakBF16H100
	}
	return peakFP32H100
}

// mfu is the fraction of peak TFLOP/s that pairsPerS pairs per second of flopsPerPair each reach.
func mfu(flopsPerPair, pairsPerS, peakTFLOPS float64) float64 {
	return flopsPerPair * pairsPerS / (peakTFLOPS * 1e12)
}
