package buckets

import (
	"convrep/datasets"
	"math/rand/v2"
)

// generator seeds a PCG from (seed, stream, example) through datasets.SplitMix64, so that every example's draws
// are fixed by those three numbers alone: the same whichever worker handles it, and in whatever order. Its draws
// below n are datasets.BoundedDraw's.
func generator(seed int64, stream, example uint64) *rand.PCG {
	hi := datasets.SplitMix64(uint64(seed) ^ datasets.SplitMix64(stream+0x6d6774))
	lo := datasets.SplitMix64(hi ^ datasets.SplitMix64(example))
	return rand.NewPCG(hi, lo)
}
