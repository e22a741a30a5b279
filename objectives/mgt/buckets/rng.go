package buckets

import (
	"math/bits"
	"math/rand/v2"
)

// generator seeds a PCG from (seed, stream, example) through splitmix64, so that every example's draws are
// fixed by those three numbers alone: the same whichever worker handles it, and in whatever order.
func generator(seed int64, stream, example uint64) *rand.PCG {
	hi := splitmix64(uint64(seed) ^ splitmix64(stream+0x6d6774))
	lo := splitmix64(hi ^ splitmix64(example))
	return rand.NewPCG(hi, lo)
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// below is a uniform draw from [0, n), n > 0 (Lemire's multiply-and-reject).
func below(g *rand.PCG, n int) int {
	un := uint64(n)
	hi, lo := bits.Mul64(g.Uint64(), un)
	if lo < un {
		t := -un % un
		for lo < t {
			hi, lo = bits.Mul64(g.Uint64(), un)
		}
	}
	return int(hi)
}
