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

// The forward and backward entries use the mask Keep gives, element for element: with resid 0 and x never 0,
// the sum is 0 exactly where Keep drops, and so is dx, for one lane and for a block of them.
func TestEntriesUseTheMask(t *testing.T) {
	s := Shape{Rows: 9, Cols: 37}
	n := s.Rows * s.Cols
	x, resid, dy := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = 1 + float32(i%7)
		dy[i] = float32(i%5) - 2.5
	}
	gamma, beta := make([]float32, s.Cols), make([]float32, s.Cols)
	for c := range gamma {
		gamma[c] = 1
	}
	d := Dropout{P: 0.3, Seed: 99, Offset: 4 * 1000}
	keep := Keep(d.Seed, d.Offset, 0, n, d.P)
	for _, lanes := range []int{1, 32} {
		fwd, err := DropAddLNForward(s, x, resid, gamma, beta, 1e-5, d, lanes)
		if err != nil {
			t.Fatal(err)
		}
		bwd, err := DropAddLNBackward(s, dy, fwd.Sum, fwd.Mean, fwd.Rstd, gamma, d, 2, lanes)
		if err != nil {
			t.Fatal(err)
		}
		for e := range n {
			if (fwd.Sum[e] != 0) != keep[e] {
				t.Fatalf("lanes %d: element %d: sum %v, but Keep says %v", lanes, e, fwd.Sum[e], keep[e])
			}
			if keep[e] && fwd.Sum[e] != x[e]*(1/(1-d.P)) {
				t.Fatalf("lanes %d: element %d: kept sum %v, want x/(1-p) = %v", lanes, e, fwd.Sum[e], x[e]*(1/(1-d.P)))
			}
			if want := float32(0); keep[e] {
				want = bwd.DResid[e] * (1 / (1 - d.P))
				if bwd.DX[e] != want {
					t.Fatalf("lanes %d: element %d: dx %v, want dresid/(1-p) = %v", lanes, e, bwd.DX[e], want)
				}
			} else if bwd.DX[e] != 0 {
				t.Fatalf("lanes %d: element %d is dropped, but dx is %v", lanes, e, bwd.DX[e])
			}
		}
	}
}

// A chunk's mask drawn at once (one Philox draw per group of four it touches) is the mask of its elements drawn
// one by one, wherever the chunk starts and however long it is.
func TestChunkMaskFollowsTheElementMask(t *testing.T) {
	for _, p := range []float32{0, 0.1, 0.5, 1} {
		for _, offset := range []uint64{0, 4, 1 << 36} {
			for e := int64(0); e < 40; e++ {
				for n := 1; n <= 4; n++ {
					want := Keep(11, offset, e, n, p)
					got := Keep4(11, offset, e, n, p)
					for k := range n {
						if bit := got>>k&1 == 1; bit != want[k] {
							t.Fatalf("p %v offset %d chunk %d+%d: element %d kept %v, want %v", p, offset, e, n, e+int64(k), bit, want[k])
						}
					}
					if got>>n != 0 {
						t.Fatalf("p %v offset %d chunk %d+%d: bits %#b set beyond the chunk", p, offset, e, n, got)
					}
				}
			}
		}
	}
}
