package benchcmd

import (
	"math"
	"testing"
)

// flopsPerPair against counts done by hand from the formula's parts.
func TestFlopsPerPair(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		layers, hidden, inter, seq int64
		want                       float64
	}{
		// N = 1·(4·2² + 2·2·8) = 48; 6·48·3 = 864; 12·1·2·3² = 216; a pair: 2·1080.
		{"one tiny layer", 1, 2, 8, 3, 2160},
		// N = 2·(4·16 + 2·4·16) = 384; 6·384·10 = 23040; 12·2·4·10² = 9600; a pair: 2·32640.
		{"two layers", 2, 4, 16, 10, 65280},
		// BERT-base at T = 32: N = 12·(4·768² + 2·768·3072) = 84,934,656; 6·N·32 = 16,307,453,952;
		// 12·12·768·32² = 113,246,208; a pair: 2·16,420,700,160 ≈ 32.8 GFLOP.
		{"BERT-base, T 32", 12, 768, 3072, 32, 32841400320},
		// BERT-base at T = 128: 6·N·128 = 65,229,815,808; 12·12·768·128² = 1,811,939,328.
		{"BERT-base, T 128", 12, 768, 3072, 128, 2 * (65229815808 + 1811939328)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := flopsPerPair(tc.layers, tc.hidden, tc.inter, tc.seq); got != tc.want {
				t.Errorf("flopsPerPair = %.0f, want %.0f", got, tc.want)
			}
		})
	}
}

// MFU is achieved FLOP/s over peak: 5,000 BERT-base pairs/s at T 32 on a 989 TFLOP/s GPU is about 16.6%.
func TestMFU(t *testing.T) {
	for _, tc := range []struct {
		flops, pairsPerS, peak, want float64
	}{
		{32841400320, 5000, 989, 32841400320 * 5000 / 989e12},
		{1e12, 1, 1, 1},
		{2e12, 10, 40, 0.5},
	} {
		if got := mfu(tc.flops, tc.pairsPerS, tc.peak); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("mfu(%g, %g, %g) = %g, want %g", tc.flops, tc.pairsPerS, tc.peak, got, tc.want)
		}
	}
	if got := mfu(32841400320, 5000, 989); math.Abs(got-0.166) > 0.001 {
		t.Errorf("BERT-base at 5,000 pairs/s: MFU %.4f, want about 0.166", got)
	}
}

// The default peaks are the H100/H200 SXM dense figures on a GPU and none on a CPU.
func TestDefaultPeak(t *testing.T) {
	for _, tc := range []struct {
		cuda      bool
		precision string
		want      float64
	}{
		{true, bf16, 989}, {true, fp32, 67}, {false, bf16, 0}, {false, fp32, 0},
	} {
		if got := defaultPeak(tc.cuda, tc.precision); got != tc.want {
			t.Errorf("defaultPeak(cuda %v, %s) = %v, want %v", tc.cuda, tc.precision, got, tc.want)
		}
	}
}
