package host

import "testing"

// Known answers from Random123's tests/kat_vectors (D. E. Shaw Research, the reference implementation of
// Salmon et al. 2011): columns counter[4], key[2], expected[4]. The three Philox4x32-10 lines, and two of the
// Philox4x32-7 lines, which pin the key schedule (a bump before every round but the first) as well.
func TestPhiloxKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rounds int
		ctr    [4]uint32
		key    [2]uint32
		want   [4]uint32
	}{
		{"10 rounds, zeros", 10, [4]uint32{0, 0, 0, 0}, [2]uint32{0, 0},
			[4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{"10 rounds, all ones", 10, [4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{"10 rounds, digits of pi", 10, [4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
		{"7 rounds, all ones", 7, [4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
		{"7 rounds, digits of pi", 7, [4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
	} {
		if got := Philox4x32(tc.ctr, tc.key, tc.rounds); got != tc.want {
			t.Errorf("%s: Philox4x32(%08x, %08x) = %08x, want %08x", tc.name, tc.ctr, tc.key, got, tc.want)
		}
	}
}

// The uniform number of element e is, as the kernels' ABI fixes it, word e%4 of Philox4x32-10 at counter
// {lo, hi of offset/4 + e/4, 0, 0} under key {lo, hi of seed}, shifted right by 8 and scaled by 2^-24.
func TestDropoutUniformLayout(t *testing.T) {
	for _, tc := range []struct {
		seed, offset uint64
		e            int64
	}{
		{0, 0, 0}, {1, 0, 3}, {42, 8, 5}, {0x0123456789abcdef, 0xfedcba9876543210 &^ 3, 1<<40 + 2},
		{7, 4 << 33, 1<<33 + 1}, {^uint64(0), 12, 7},
	} {
		g := tc.offset/4 + uint64(tc.e/4)
		words := Philox4x32([4]uint32{uint32(g), uint32(g >> 32), 0, 0}, [2]uint32{uint32(tc.seed), uint32(tc.seed >> 32)}, 10)
		want := float32(words[tc.e%4]>>8) / (1 << 24)
		if got := DropoutU(tc.seed, tc.offset, tc.e); got != want {
			t.Errorf("seed %#x offset %#x element %d: u = %v, want %v", tc.seed, tc.offset, tc.e, got, want)
		}
	}
}
