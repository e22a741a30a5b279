package host

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// aligned is v copied to an address that is a multiple of a chunk's bytes (16 for float32, 8 for bf16), so
// every chunk of a row whose cols is a multiple of 4 moves in one vector load; shifted is v copied one element
// past such an address, so no chunk does and the row functions read it element by element.
func aligned[T Storage](v []T) []T { return placed(v, 0) }
func shifted[T Storage](v []T) []T { return placed(v, 1) }

func placed[T Storage](v []T, skip int) []T {
	var z T
	chunk := 4 * unsafe.Sizeof(z)
	buf := make([]T, len(v)+8)
	start := 0
	for uintptr(unsafe.Pointer(&buf[start]))%chunk != 0 {
		start++
	}
	out := buf[start+skip : start+skip+len(v)]
	copy(out, v)
	return out
}

// A row read with vector loads (aligned inputs, cols a multiple of 4) and the same row read element by element
// (inputs one element off) give the same bits, forward and backward, for one lane and for a block of them.
func TestVectorAndElementLoadsAgree(t *testing.T) {
	for _, cols := range []int{64, 768} {
		for _, lanes := range []int{1, 32} {
			name := fmt.Sprintf("cols %d/lanes %d", cols, lanes)
			t.Run(name+"/f32", func(t *testing.T) { checkVectorLoads[float32](t, cols, lanes) })
			t.Run(name+"/bf16", func(t *testing.T) { checkVectorLoads[uint16](t, cols, lanes) })
		}
	}
}

func checkVectorLoads[T Storage](t *testing.T, cols, lanes int) {
	r := rand.New(rand.NewPCG(uint64(cols), uint64(lanes)))
	s := Shape{Rows: 5, Cols: cols}
	x, resid, dy := aligned(store[T](values(r, s.n(), 1, 0))), aligned(store[T](values(r, s.n(), 1, 0))), aligned(store[T](values(r, s.n(), 1, 0)))
	gamma, beta := float32s(values(r, cols, 0.2, 1)), float32s(values(r, cols, 0.2, 0))
	d := Dropout{P: 0.1, Seed: 5, Offset: 64}
	fwd := func(x, resid []T) LNForward[T] {
		f, err := DropAddLNForward(s, x, resid, gamma, beta, 1e-12, d, lanes)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := fwd(x, resid), fwd(shifted(x), shifted(resid))
	same(t, "out", a.Out, b.Out)
	same(t, "sum", a.Sum, b.Sum)
	same(t, "mean", a.Mean, b.Mean)
	same(t, "rstd", a.Rstd, b.Rstd)
	bwd := func(dy, sum []T) LNBackward[T] {
		g, err := DropAddLNBackward(s, dy, sum, a.Mean, a.Rstd, gamma, d, 2, lanes)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	ga, gb := bwd(dy, aligned(a.Sum)), bwd(shifted(dy), shifted(a.Sum))
	same(t, "dx", ga.DX, gb.DX)
	same(t, "dresid", ga.DResid, gb.DResid)
	same(t, "dgamma", ga.DGammaPart, gb.DGammaPart)
	same(t, "dbeta", ga.DBetaPart, gb.DBetaPart)

	ya, err := BiasGELUForward(s, x, beta, lanes)
	if err != nil {
		t.Fatal(err)
	}
	yb, err := BiasGELUForward(s, shifted(x), beta, lanes)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "gelu", ya, yb)
	dxa, dba, err := BiasGELUBackward(s, x, beta, dy, 3, lanes)
	if err != nil {
		t.Fatal(err)
	}
	dxb, dbb, err := BiasGELUBackward(s, shifted(x), beta, shifted(dy), 3, lanes)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "gelu dx", dxa, dxb)
	same(t, "gelu dbias", dba, dbb)
}

func same[E comparable](t *testing.T, what string, a, b []E) {
	t.Helper()
	if !slices.Equal(a, b) {
		for i := range a {
			if a[i] != b[i] {
				t.Errorf("%s: element %d is %v read by vectors, %v element by element", what, i, a[i], b[i])
				return
			}
		}
		t.Errorf("%s: %d values read by vectors, %d element by element", what, len(a), len(b))
	}
}
