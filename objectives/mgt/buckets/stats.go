package buckets

// SegmentSimilarity is the mean cosine between each example's ground truth and its negatives, per segment
// (index l−1 for segment l): the quantity that must fall from segment 1 to L.
func SegmentSimilarity(p *Pool, gts []int32, n *Negatives) []float64 {
	out := make([]float64, n.Segments)
	for e, gt := range gts {
		for l := 1; l <= n.Segments; l++ {
			for _, x := range n.Of(e, l) {
				out[l-1] += float64(p.Cosine(int(gt), int(x)))
			}
		}
	}
	for l := range out {
		out[l] /= float64(len(gts) * n.PerSegment)
	}
	return out
}
