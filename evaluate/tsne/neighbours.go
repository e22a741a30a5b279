package tsne

// knn holds each point's k nearest other points, nearest first: idx[i*k+m] and the squared Euclidean
// distance dist[i*k+m].
type knn struct {
	n, k int
	idx  []int32
	dist []float64
}

// nearest finds the exact k nearest neighbours of every row of the n×d row-major data by brute force.
// At the sizes this package is for (thousands of points in 50 dimensions after PCA) this costs about a
// second and, unlike bhtsne's vantage-point tree, needs no metric-tree bookkeeping. Ties go to the lower
// index.
func nearest(data []float64, n, d, k int) knn {
	out := knn{n: n, k: k, idx: make([]int32, n*k), dist: make([]float64, n*k)}
	parallelFor(n, func(lo, hi int) {
		h := maxHeap{idx: make([]int32, 0, k), dist: make([]float64, 0, k)}
		for i := lo; i < hi; i++ {
			h.idx, h.dist = h.idx[:0], h.dist[:0]
			xi := data[i*d : (i+1)*d]
			for j := 0; j < n; j++ {
				if j == i {
					continue
				}
				xj := data[j*d : (j+1)*d]
				s := 0.0
				for c, v := range xi {
					t := v - xj[c]
					s += t * t
				}
				h.offer(int32(j), s, k)
			}
			// Pop the farthest first, filling the row from its end.
			for m := k - 1; m >= 0; m-- {
				out.idx[i*k+m], out.dist[i*k+m] = h.pop()
			}
		}
	})
	return out
}

// maxHeap keeps the k smallest distances seen, the largest on top; among equal distances the larger index
// counts as farther, so the result does not depend on the order of offers.
type maxHeap struct {
	idx  []int32
	dist []float64
}

func (h *maxHeap) farther(a, b int) bool {
	if h.dist[a] != h.dist[b] {
		return h.dist[a] > h.dist[b]
	}
	return h.idx[a] > h.idx[b]
}

func (h *maxHeap) swap(a, b int) {
	h.idx[a], h.idx[b] = h.idx[b], h.idx[a]
	h.dist[a], h.dist[b] = h.dist[b], h.dist[a]
}

// offer adds (j, s) if fewer than k are held or it is nearer than the farthest held.
func (h *maxHeap) offer(j int32, s float64, k int) {
	if len(h.idx) < k {
		h.idx, h.dist = append(h.idx, j), append(h.dist, s)
		for c := len(h.idx) - 1; c > 0; {
			p := (c - 1) / 2
			if !h.farther(c, p) {
				break
			}
			h.swap(c, p)
			c = p
		}
		return
	}
	if s > h.dist[0] || (s == h.dist[0] && j > h.idx[0]) {
		return
	}
	h.idx[0], h.dist[0] = j, s
	h.down(0)
}

// pop removes and returns the farthest held.
func (h *maxHeap) pop() (int32, float64) {
	j, s := h.idx[0], h.dist[0]
	last := len(h.idx) - 1
	h.swap(0, last)
	h.idx, h.dist = h.idx[:last], h.dist[:last]
	h.down(0)
	return j, s
}

func (h *maxHeap) down(p int) {
	for {
		c := 2*p + 1
		if c >= len(h.idx) {
			return
		}
		if c+1 < len(h.idx) && h.farther(c+1, c) {
			c++
		}
		if !h.farther(c, p) {
			return
		}
		h.swap(c, p)
		p = c
	}
}
