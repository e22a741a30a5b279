package mlm

import (
	"math"
	"slices"
	"testing"

	"convrep/objectives/inputs"
	"convrep/objectives/internal/testutil"
)

func maskOpts() MaskOptions {
	return MaskOptions{Prob: 0.15, MaskID: 4, VocabSize: 100, Special: map[int64]bool{0: true, 1: true, 2: true, 3: true, 4: true}}
}

// MaskRow chooses round(15%) of the eligible tokens (at least one), never a special token nor padding,
// labels exactly the chosen ones with their original ids, and changes nothing else.
func TestMaskRowChoosesOnlyEligibleTokens(t *testing.T) {
	opt := maskOpts()
	for _, tc := range []struct {
		name   string
		row    []int64
		length int
		want   int // chosen tokens
	}{
		{"no eligible token", []int64{2, 3, 0, 0}, 2, 0},
		{"one eligible token", []int64{2, 50, 3, 0}, 3, 1},
		{"twenty tokens", append(append([]int64{2}, testutil.Seq(10, 20)...), 3), 22, 3},
		{"padding after length is never chosen", append(append([]int64{2}, testutil.Seq(10, 40)...), 3, 77, 77, 77), 42, 6},
		{"role tokens are special", []int64{2, 1, 10, 11, 12, 1, 13, 14, 3}, 9, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := 0; seed < 50; seed++ {
				masked, labels := MaskRow(tc.row, tc.length, opt, ExampleRand(int64(seed), 0, 0))
				if len(masked) != len(tc.row) || len(labels) != len(tc.row) {
					t.Fatalf("lengths %d, %d; want %d", len(masked), len(labels), len(tc.row))
				}
				chosen := 0
				for j, l := range labels {
					if l == inputs.IgnoreLabel {
						if masked[j] != tc.row[j] {
							t.Fatalf("position %d not chosen but changed: %v → %v", j, tc.row, masked)
						}
						continue
					}
					chosen++
					if j >= tc.length || opt.Special[tc.row[j]] {
						t.Fatalf("position %d (id %d, length %d) chosen", j, tc.row[j], tc.length)
					}
					if l != tc.row[j] {
						t.Fatalf("label %d at %d, want the original %d", l, j, tc.row[j])
					}
					if opt.Special[masked[j]] && masked[j] != opt.MaskID {
						t.Fatalf("a special token %d was drawn as the random replacement", masked[j])
					}
				}
				if chosen != tc.want {
					t.Fatalf("seed %d: %d tokens chosen, want %d", seed, chosen, tc.want)
				}
			}
		})
	}
}

// Of the chosen tokens about 80% become the mask token, 10% a random token, 10% stay (BERT §3.1), and
// chosen positions are spread uniformly.
func TestMaskRowProportions(t *testing.T) {
	opt := maskOpts()
	row := append(append([]int64{2}, testutil.Seq(10, 40)...), 3)
	var mask, random, kept, total int
	perPos := make([]int, len(row))
	for ex := 0; ex < 20000; ex++ {
		masked, labels := MaskRow(row, len(row), opt, ExampleRand(1, 0, ex))
		for j, l := range labels {
			if l == inputs.IgnoreLabel {
				continue
			}
			total++
			perPos[j]++
			switch masked[j] {
			case opt.MaskID:
				mask++
			case row[j]:
				kept++ // a random draw equal to the original (1 in 95) counts as kept, as in BERT
			default:
				random++
			}
		}
	}
	for _, c := range []struct {
		what string
		n    int
		want float64
	}{{"mask", mask, 0.8}, {"random", random, 0.1 * 94 / 95}, {"kept", kept, 0.1 + 0.1/95}} {
		p := float64(c.n) / float64(total)
		if math.Abs(p-c.want) > 0.01 {
			t.Errorf("%s: %.4f of the chosen tokens, want %.4f", c.what, p, c.want)
		}
	}
	// 6 of 40 per row: each eligible position is chosen with probability 0.15.
	for j := 1; j <= 40; j++ {
		if p := float64(perPos[j]) / 20000; math.Abs(p-0.15) > 0.015 {
			t.Errorf("position %d chosen %.4f of the time, want 0.15", j, p)
		}
	}
}

// The masking of an example depends only on (seed, epoch, example): the same triple masks alike, another
// epoch or example differently; MaskTokens is MaskRow row after row and leaves its input alone.
func TestMaskingIsAFunctionOfSeedEpochExample(t *testing.T) {
	opt := maskOpts()
	row := append(append([]int64{2}, testutil.Seq(10, 60)...), 3)
	orig := slices.Clone(row)
	a, la := MaskRow(row, len(row), opt, ExampleRand(7, 2, 13))
	b, lb := MaskRow(row, len(row), opt, ExampleRand(7, 2, 13))
	if !slices.Equal(a, b) || !slices.Equal(la, lb) {
		t.Fatal("the same (seed, epoch, example) masked differently")
	}
	for _, other := range [][3]int64{{7, 3, 13}, {7, 2, 14}, {8, 2, 13}} {
		c, _ := MaskRow(row, len(row), opt, ExampleRand(other[0], int(other[1]), int(other[2])))
		if slices.Equal(a, c) {
			t.Errorf("(seed, epoch, example) %v masked like (7, 2, 13)", other)
		}
	}
	if !slices.Equal(row, orig) {
		t.Error("MaskRow changed its input")
	}
	rows := [][]int64{row, {2, 10, 11, 3, 0}}
	g1, g2 := ExampleRand(1, 0, 0), ExampleRand(1, 0, 0)
	m, l := MaskTokens(rows, []int{len(row), 4}, opt, g1)
	for i := range rows {
		n := []int{len(row), 4}[i]
		wm, wl := MaskRow(rows[i], n, opt, g2)
		if !slices.Equal(m[i], wm) || !slices.Equal(l[i], wl) {
			t.Errorf("row %d: MaskTokens differs from MaskRow", i)
		}
	}
}

func TestMaskOptionsValidate(t *testing.T) {
	good := maskOpts()
	for _, tc := range []struct {
		name string
		edit func(*MaskOptions)
		ok   bool
	}{
		{"good", func(*MaskOptions) {}, true},
		{"zero probability", func(o *MaskOptions) { o.Prob = 0 }, false},
		{"probability above one", func(o *MaskOptions) { o.Prob = 1.5 }, false},
		{"mask outside the vocabulary", func(o *MaskOptions) { o.MaskID = 100 }, false},
		{"no vocabulary", func(o *MaskOptions) { o.VocabSize = 0 }, false},
		{"all special", func(o *MaskOptions) { o.VocabSize = 5 }, false},
	} {
		o := good
		o.Special = good.Special
		tc.edit(&o)
		if err := o.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v", tc.name, err)
		}
	}
}
