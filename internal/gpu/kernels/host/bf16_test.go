package host

import (
	"math"
	"testing"
)

// bf16 stores round to nearest, ties to even, overflow to infinity, and keep a NaN a NaN.
func TestBF16Rounding(t *testing.T) {
	f := math.Float32frombits
	for _, tc := range []struct {
		name string
		in   float32
		want uint16
	}{
		{"exact", 1.5, 0x3fc0},
		{"below half an ulp", f(0x3f80_7fff), 0x3f80},
		{"tie to even, down", f(0x3f80_8000), 0x3f80},
		{"tie to even, up", f(0x3f81_8000), 0x3f82},
		{"above half an ulp", f(0x3f80_8001), 0x3f81},
		{"negative", -2.0, 0xc000},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"largest finite", f(0x7f7f_0000), 0x7f7f},
		{"overflow", math.MaxFloat32, 0x7f80},
		{"infinity", float32(math.Inf(-1)), 0xff80},
		{"smallest subnormal rounds to zero", f(0x0000_0001), 0x0000},
		{"NaN whose payload would carry", f(0x7fff_ffff), 0x7fff},
		{"NaN with a low payload only", f(0x7f80_0001), 0x7fc0},
		{"negative NaN", f(0xff80_0001), 0xffc0},
	} {
		if got := BF16(tc.in); got != tc.want {
			t.Errorf("%s: BF16(%#08x) = %#04x, want %#04x", tc.name, math.Float32bits(tc.in), got, tc.want)
		}
	}
}
