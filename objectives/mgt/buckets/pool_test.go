package buckets

import (
	"math"
	"testing"
)

func TestNewPoolNormalises(t *testing.T) {
	p, err := NewPool([]float32{3, 4, 0, 0, 0, 2}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.N != 3 || math.Abs(float64(p.Cosine(0, 0))-1) > 1e-6 || p.Cosine(1, 1) != 0 || math.Abs(float64(p.Cosine(0, 2))-0.8) > 1e-6 {
		t.Fatalf("pool %+v: cos(0,0)=%v cos(1,1)=%v cos(0,2)=%v", p, p.Cosine(0, 0), p.Cosine(1, 1), p.Cosine(0, 2))
	}
	if _, err := NewPool([]float32{1, 2, 3}, 2); err == nil {
		t.Fatal("3 values taken as rows of 2")
	}
	if _, err := NewPool([]float32{float32(math.NaN()), 1}, 2); err == nil {
		t.Fatal("a NaN row accepted")
	}
}

func TestDotMatchesLoop(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 7, 16} {
		a, b := make([]float32, n), make([]float32, n)
		want := float32(0)
		for i := range a {
			a[i], b[i] = float32(i)+0.5, float32(n-i)
			want += a[i] * b[i]
		}
		if got := dot(a, b); math.Abs(float64(got-want)) > 1e-4 {
			t.Errorf("n=%d: dot %v, want %v", n, got, want)
		}
	}
}

func TestCentred(t *testing.T) {
	// Unit rows (1, 0) and (0, 1): their mean is (½, ½), so centred they are (½, −½) and (−½, ½), opposite.
	p, err := NewPool([]float32{2, 0, 0, 3}, 2)
	if err != nil {
		t.Fatal(err)
	}
	c := Centred(p)
	s := float32(math.Sqrt(0.5))
	want := []float32{s, -s, -s, s}
	for i, v := range c.Vecs {
		if math.Abs(float64(v-want[i])) > 1e-6 {
			t.Fatalf("centred rows %v, want %v", c.Vecs, want)
		}
	}
	if got := c.Cosine(0, 1); math.Abs(float64(got+1)) > 1e-6 {
		t.Errorf("centred cosine %v, want −1", got)
	}
	if p.Vecs[0] != 1 || p.Vecs[3] != 1 {
		t.Errorf("Centred changed its input: %v", p.Vecs)
	}
}
