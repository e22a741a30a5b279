package datasets

import (
	"math/bits"
	"math/rand/v2"
)

// Training order. Both functions draw from math/rand/v2's PCG, whose
// output for a given seed the Go project specifies, and do their own
// Fisher-Yates and bounded draws rather than calling Rand.Shuffle or
// Rand.Perm: those are not promised to stay the same across Go releases
// and take another path on 32-bit machines. So an order depends on its
// arguments alone, on every machine and Go version.

// Streams keep Shuffle's draws apart from the epoch orders, so that
// shuffling pairs once and then ordering epochs with the same seed does
// not reuse one permutation.
const (
	streamShuffle uint64 = 0x73687566666c65 // "shuffle"
	streamOrder   uint64 = 0x6f72646572     // "order"
)

// Shuffle reorders pairs in place, deterministically for a seed.
func Shuffle(pairs []Pair, seed int64) {
	shuffle(len(pairs), seed, func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
}

// ShuffleOrder is Shuffle as a permutation: Shuffle(pairs, seed) leaves pairs[p[i]] of the old order at
// position i, where p = ShuffleOrder(len(pairs), seed). A streamed cache build draws its subset of
// data.max_examples with it, from the number of pairs alone. n <= 0 gives an empty order.
func ShuffleOrder(n int, seed int64) []int {
	p := make([]int, max(n, 0))
	for i := range p {
		p[i] = i
	}
	shuffle(len(p), seed, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

// shuffle is Shuffle's Fisher-Yates over n items that swap exchanges.
func shuffle(n int, seed int64, swap func(i, j int)) {
	g := newPCG(seed, streamShuffle, 0)
	for i := n - 1; i > 0; i-- {
		swap(i, BoundedDraw(g, uint64(i)+1))
	}
}

// Order returns the permutation of 0..n-1 that epoch visits, derived from
// seed and epoch only: a run resumed at epoch e sees the order it would
// have seen without stopping. n <= 0 gives an empty order.
func Order(n int, seed int64, epoch int) []int {
	if n <= 0 {
		return []int{}
	}
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	g := newPCG(seed, streamOrder, uint64(epoch))
	for i := n - 1; i > 0; i-- {
		j := BoundedDraw(g, uint64(i)+1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// newPCG seeds a PCG from (seed, stream, epoch) through SplitMix64, so
// that neighbouring seeds or epochs start from unrelated states.
func newPCG(seed int64, stream, epoch uint64) *rand.PCG {
	hi := SplitMix64(uint64(seed) ^ SplitMix64(stream))
	lo := SplitMix64(hi ^ SplitMix64(epoch+stream))
	return rand.NewPCG(hi, lo)
}

// SplitMix64 is Steele, Lea and Flood's 64-bit finaliser, which seeds the training order's generators here and
// MGT's per-example draws (objectives/mgt/buckets).
func SplitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// BoundedDraw returns a uniform value in [0, n), n > 0, by Lemire's
// multiply-and-reject method.
func BoundedDraw(g *rand.PCG, n uint64) int {
	hi, lo := bits.Mul64(g.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(g.Uint64(), n)
		}
	}
	return int(hi)
}
