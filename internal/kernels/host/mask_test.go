package host

import (
	"math"
	"testing"
)

func share(keep []bool) float64 {
	n := 0
	for _, k := range keep {
		if k {
			n++
		}
	}
	return float64(n) / float64(len(keep))
}

func agreement(a, b []bool) float64 {
	n := 0
	for i := range a {
		if a[i] == b[i] {
			n++
		}
	}
	return float64(n) / float64(len(a))
}

// With p = 0.1, about 0.9 of a million elements are kept (the binomial standard deviation is 0.0003).
func TestMaskKeepsOneMinusP(t *testing.T) {
	const n = 1_000_000
	for _, p := range []float32{0.1, 0.5} {
		for _, seed := range []uint64{0, 1, 0x9e3779b97f4a7c15} {
			if got := share(Keep(seed, 0, 0, n, p)); math.Abs(got-(1-float64(p))) > 0.003 {
				t.Errorf("p %v seed %#x: kept share %.5f, want %.1f ± 0.003", p, seed, got, 1-p)
			}
		}
	}
	if got := share(Keep(3, 0, 0, 1000, 0)); got != 1 {
		t.Errorf("p = 0 kept share %v, want 1", got)
	}
	if got := share(Keep(3, 0, 0, 1000, 1)); got != 0 {
		t.Errorf("p = 1 kept share %v, want 0", got)
	}
}

// The same (seed, offset) gives the same mask, so backward regenerates forward's; another offset or seed
// gives an independent one (agreement near 0.9² + 0.1² = 0.82, far below 1); and moving the offset on by 4k
// moves the counters by k, so a call at offset o+4k draws what elements 4k.. of a call at offset o drew.
func TestMaskDependsOnSeedAndOffset(t *testing.T) {
	const n, p = 100_000, 0.1
	base := Keep(7, 4096, 0, n, p)
	if got := agreement(base, Keep(7, 4096, 0, n, p)); got != 1 {
		t.Fatalf("the same seed and offset agree on %.4f of the mask, want all of it", got)
	}
	for _, tc := range []struct {
		name         string
		seed, offset uint64
	}{
		{"next call's offset", 7, 4096 + 4*n/4},
		{"offset + 4", 7, 4100},
		{"other seed", 8, 4096},
	} {
		if got := agreement(base, Keep(tc.seed, tc.offset, 0, n, p)); got > 0.85 || got < 0.79 {
			t.Errorf("%s: agreement %.4f with the base mask, want about 0.82", tc.name, got)
		}
	}
	shifted := Keep(7, 4096+4*10, 0, n-40, p)
	if got := agreement(base[40:], shifted); got != 1 {
		t.Errorf("offset + 40 agrees on %.4f with elements 40.. at the base offset, want all of them", got)
	}
}
