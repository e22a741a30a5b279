package buckets

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// randomPool is n random unit vectors of dim (normal coordinates, so directions are uniform).
func randomPool(t *testing.T, n, dim int, seed uint64) *Pool {
	t.Helper()
	g := rand.New(rand.NewPCG(seed, 1))
	v := make([]float32, n*dim)
	for i := range v {
		v[i] = float32(g.NormFloat64())
	}
	p, err := NewPool(v, dim)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func gtsOf(n, pool int) []int32 {
	gts := make([]int32, n)
	for i := range gts {
		gts[i] = int32((i * 7919) % pool)
	}
	return gts
}

// checkDistinct fails when a negative is the ground truth or repeats within a segment.
func checkDistinct(t *testing.T, gts []int32, n *Negatives) {
	t.Helper()
	for e, gt := range gts {
		for l := 1; l <= n.Segments; l++ {
			seg := n.Of(e, l)
			for j, x := range seg {
				if x == gt {
					t.Fatalf("example %d segment %d: the ground truth %d is a negative", e, l, gt)
				}
				if slices.Contains(seg[:j], x) {
					t.Fatalf("example %d segment %d: negative %d twice in %v", e, l, x, seg)
				}
			}
		}
	}
}

func TestBuildSegmentsFallInSimilarity(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		pool, dim, examples   int
		segments, negs, sampl int
	}{
		{"sampled boundaries", 5000, 16, 300, 5, 19, 1000},
		{"exact: whole pool scored", 200, 8, 100, 4, 9, 500},
		{"two segments", 3000, 32, 200, 2, 4, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := randomPool(t, tc.pool, tc.dim, 3)
			gts := gtsOf(tc.examples, tc.pool)
			n, err := Build(p, gts, Options{Segments: tc.segments, Negatives: tc.negs, Sample: tc.sampl, Seed: 9})
			if err != nil {
				t.Fatal(err)
			}
			checkDistinct(t, gts, n)
			sim := SegmentSimilarity(p, gts, n)
			for l := 1; l < len(sim); l++ {
				if !(sim[l-1] > sim[l]) {
					t.Fatalf("mean cosine by segment %v: not strictly falling at segment %d", sim, l+1)
				}
			}
			t.Logf("mean cosine by segment: %.3f", sim)
		})
	}
}

// With the whole pool scored (|R|−1 ≤ S), the segments are Eq. 12's exactly: every negative of segment l is
// at least as close to the ground truth as every negative of segment l+1.
func TestBuildExactSegmentsDoNotOverlap(t *testing.T) {
	p := randomPool(t, 101, 6, 5)
	gts := gtsOf(40, 101)
	n, err := Build(p, gts, Options{Segments: 5, Negatives: 20, Sample: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for e, gt := range gts {
		for l := 1; l < 5; l++ {
			lo := float32(2)
			for _, x := range n.Of(e, l) {
				lo = min(lo, p.Cosine(int(gt), int(x)))
			}
			for _, x := range n.Of(e, l+1) {
				if c := p.Cosine(int(gt), int(x)); c > lo {
					t.Fatalf("example %d: segment %d holds cosine %.4f above segment %d's lowest %.4f", e, l+1, c, l, lo)
				}
			}
		}
		// 100 others in 5 segments of 20, all drawn: together they are every response but the ground truth.
		var all []int32
		for l := 1; l <= 5; l++ {
			all = append(all, n.Of(e, l)...)
		}
		slices.Sort(all)
		if len(slices.Compact(all)) != 100 {
			t.Fatalf("example %d: the segments cover %d responses, want all 100 others", e, len(slices.Compact(all)))
		}
	}
}

func TestBuildIsIndependentOfWorkers(t *testing.T) {
	p := randomPool(t, 2000, 8, 7)
	gts := gtsOf(97, 2000)
	var ref []int32
	for _, w := range []int{1, 2, 5} {
		n, err := Build(p, gts, Options{Segments: 3, Negatives: 5, Sample: 300, Seed: 4, Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = n.Idx
		} else if !slices.Equal(ref, n.Idx) {
			t.Fatalf("%d workers drew other negatives than 1", w)
		}
	}
	n, _ := Build(p, gts, Options{Segments: 3, Negatives: 5, Sample: 300, Seed: 5})
	if slices.Equal(ref, n.Idx) {
		t.Fatal("another seed drew the same negatives")
	}
}

func TestBuildRejects(t *testing.T) {
	p := randomPool(t, 10, 4, 1)
	for _, tc := range []struct {
		name string
		gts  []int32
		opt  Options
	}{
		{"sample below L·(k−1)", []int32{0}, Options{Segments: 5, Negatives: 4, Sample: 19}},
		{"pool smaller than L+1", []int32{0}, Options{Segments: 10, Negatives: 1, Sample: 100}},
		{"ground truth outside the pool", []int32{10}, Options{Segments: 2, Negatives: 1, Sample: 10}},
		{"no segments", []int32{0}, Options{Segments: 0, Negatives: 1, Sample: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Build(p, tc.gts, tc.opt); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestUniform(t *testing.T) {
	gts := gtsOf(500, 50)
	a, err := Uniform(50, gts, 19, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkDistinct(t, gts, a)
	b, _ := Uniform(50, gts, 19, 3, 1)
	c, _ := Uniform(50, gts, 19, 3, 2)
	if !slices.Equal(a.Idx, b.Idx) {
		t.Fatal("the same seed and stream drew other negatives")
	}
	if slices.Equal(a.Idx, c.Idx) {
		t.Fatal("two ensemble members drew the same negatives")
	}
	// Every response but the ground truth is about equally likely: 500·19 draws over 49 others each.
	counts := make([]int, 50)
	for _, x := range a.Idx {
		counts[x]++
	}
	for i, k := range counts {
		if k == 0 {
			t.Fatalf("response %d never drawn", i)
		}
	}
	if _, err := Uniform(5, []int32{0}, 5, 1, 1); err == nil {
		t.Fatal("5 distinct negatives drawn from a pool of 5")
	}
}

func TestCacheRoundTripAndStale(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "not-yet", "x.bin") // the folder is made on the first write
	key := Key{1, 2, 3}
	vals := []float32{1.5, -2, 0, 3.25, 7, 8}
	if err := SaveFloat32s(path, key, [3]int{3, 2, 1}, vals); err != nil {
		t.Fatal(err)
	}
	dims, got, err := LoadFloat32s(path, key)
	if err != nil || dims != [3]int{3, 2, 1} || !slices.Equal(got, vals) {
		t.Fatalf("read back %v %v (%v), wrote %v", dims, got, err, vals)
	}
	if _, _, err := LoadFloat32s(path, Key{9}); !errors.Is(err, ErrStale) {
		t.Fatalf("another key: %v, want ErrStale", err)
	}
	if _, _, err := LoadInt32s(path, key); !errors.Is(err, ErrStale) {
		t.Fatalf("another kind: %v, want ErrStale", err)
	}
	b, _ := os.ReadFile(path)
	b[len(b)-6] ^= 1 // a value's bit: the checksum must catch it
	os.WriteFile(path, b, 0o644)
	if _, _, err := LoadFloat32s(path, key); !errors.Is(err, ErrStale) {
		t.Fatalf("flipped bit: %v, want ErrStale", err)
	}
	if _, _, err := LoadFloat32s(filepath.Join(dir, "none"), key); !missing(err) {
		t.Fatalf("missing file: %v", err)
	}
}

// With a ceiling and twin classes, no negative of any segment is a near-duplicate of its ground truth; without
// them the closest segment draws exactly those responses. The pool: 60 random directions, and for each of the
// first 3 ground truths 10 responses within a few degrees of it (cosine > 0.99) and 5 whose text class is its.
func TestBuildExcludesNearDuplicates(t *testing.T) {
	const dim, base = 8, 60
	p := randomPool(t, base, dim, 7)
	vecs := append([]float32(nil), p.Vecs...)
	twins := make([]int32, 0, base+45)
	for i := range base {
		twins = append(twins, int32(i))
	}
	g := rand.New(rand.NewPCG(3, 4))
	near := map[int32][]int32{}
	for gt := int32(0); gt < 3; gt++ {
		for j := range 15 {
			idx := int32(len(twins))
			row := append([]float32(nil), p.Row(int(gt))...)
			class := int32(base + len(twins)) // a class of its own
			if j < 10 {
				for k := range row {
					row[k] += float32(0.01 * g.NormFloat64())
				}
			} else {
				row = append([]float32(nil), p.Row(int(40+j))...) // far in the embedding, the ground truth's text
				class = twins[gt]
			}
			vecs = append(vecs, row...)
			twins = append(twins, class)
			near[gt] = append(near[gt], idx)
		}
	}
	pool, err := NewPool(vecs, dim)
	if err != nil {
		t.Fatal(err)
	}
	gts := []int32{0, 1, 2}
	opt := Options{Segments: 5, Negatives: 4, Sample: 200, Seed: 9}
	plain, err := Build(pool, gts, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Ceiling, opt.Twins = 0.99, twins
	clean, err := Build(pool, gts, opt)
	if err != nil {
		t.Fatal(err)
	}
	checkDistinct(t, gts, clean)
	for e, gt := range gts {
		drawn := 0
		for l := 1; l <= 5; l++ {
			for _, x := range clean.Of(e, l) {
				if slices.Contains(near[gt], x) {
					t.Errorf("example %d segment %d: negative %d is a near-duplicate of ground truth %d", e, l, x, gt)
				}
			}
			for _, x := range plain.Of(e, l) {
				if slices.Contains(near[gt][:10], x) {
					drawn++
					if l != 1 {
						t.Errorf("example %d: near-duplicate %d in segment %d, want segment 1 (the closest)", e, x, l)
					}
				}
			}
		}
		if drawn == 0 {
			t.Errorf("example %d: without the ceiling no near-duplicate was drawn; the test shows nothing", e)
		}
	}
	if clean.Excluded != 45 || plain.Excluded != 0 {
		t.Errorf("excluded %d and %d, want 45 (15 per example) and 0", clean.Excluded, plain.Excluded)
	}
	opt.Ceiling = 1.5
	if _, err := Build(pool, gts, opt); err == nil {
		t.Error("a ceiling of 1.5 was accepted")
	}
	opt.Ceiling, opt.Twins = 0, twins[:10]
	if _, err := Build(pool, gts, opt); err == nil {
		t.Error("10 twin classes for a larger pool were accepted")
	}
}

func TestNormalisedTwins(t *testing.T) {
	got := NormalisedTwins([]string{"Anything else?", "anything  else .", "Is there anything else?", "ANYTHING ELSE", "it's 5 pm", "its 5 pm", "it s 5pm"})
	want := []int32{0, 0, 1, 0, 2, 3, 4}
	if !slices.Equal(got, want) {
		t.Errorf("classes %v, want %v", got, want)
	}
}

// A ceiling below every similarity in the pool (an anisotropic encoder: all cosines near 1) would leave no
// negatives: it is not applied and the example counts as fallen back, while the ground truth's normalised-text
// twins still leave its segments.
func TestBuildCeilingBelowThePoolKeepsTheTwinsOut(t *testing.T) {
	const dim, n = 4, 40
	g := rand.New(rand.NewPCG(5, 6))
	vecs := make([]float32, 0, n*dim)
	twins := make([]int32, n)
	for i := range n {
		for k := range dim {
			vecs = append(vecs, 1+float32(0.01*g.NormFloat64())+float32(k)) // every cosine above 0.99
		}
		twins[i] = int32(i)
	}
	twins[7], twins[11] = 0, 0 // responses 7 and 11 are response 0's text
	pool, err := NewPool(vecs, dim)
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Segments: 3, Negatives: 5, Sample: n, Seed: 1, Ceiling: 0.9, Twins: twins}
	negs, err := Build(pool, []int32{0}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if negs.Excluded != 2 || negs.FellBack != 1 {
		t.Errorf("excluded %d, fallen back %d; want 2 (the twins) and 1 (the ceiling)", negs.Excluded, negs.FellBack)
	}
	for l := 1; l <= 3; l++ {
		for _, x := range negs.Of(0, l) {
			if x == 7 || x == 11 {
				t.Errorf("segment %d holds %d, a twin of the ground truth", l, x)
			}
		}
	}
}

// An anisotropic pool (every raw cosine above 0.99) holding five paraphrases of the ground truth: the raw ceiling
// cannot tell them apart and falls back, the centred one leaves out exactly the five.
func TestBuildCentredCeilingLeavesOutParaphrases(t *testing.T) {
	const dim, n, paraphrases = 16, 40, 5
	g := rand.New(rand.NewPCG(8, 9))
	vecs := make([]float32, 0, (n+paraphrases)*dim)
	for range n {
		for k := range dim {
			vecs = append(vecs, 1+float32(k)+float32(0.01*g.NormFloat64()))
		}
	}
	for range paraphrases {
		for k := range dim {
			vecs = append(vecs, vecs[k]+float32(0.001*g.NormFloat64()))
		}
	}
	pool, err := NewPool(vecs, dim)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name               string
		centred            bool
		excluded, fellBack int64
	}{
		{"raw cosine", false, 0, 1},
		{"centred cosine", true, paraphrases, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := Options{Segments: 3, Negatives: 5, Sample: n + paraphrases, Seed: 1, Ceiling: 0.9, CentredCeiling: tc.centred}
			negs, err := Build(pool, []int32{0}, opt)
			if err != nil {
				t.Fatal(err)
			}
			if negs.Excluded != tc.excluded || negs.FellBack != tc.fellBack {
				t.Errorf("excluded %d, fallen back %d; want %d and %d", negs.Excluded, negs.FellBack, tc.excluded, tc.fellBack)
			}
			if !tc.centred {
				return
			}
			for l := 1; l <= 3; l++ {
				for _, x := range negs.Of(0, l) {
					if x >= n {
						t.Errorf("segment %d holds %d, a paraphrase of the ground truth", l, x)
					}
				}
			}
		})
	}
	if (Options{Ceiling: 0.9}).Key() == (Options{Ceiling: 0.9, CentredCeiling: true}).Key() {
		t.Error("the centred ceiling does not change the negatives' cache key")
	}
	if _, err := Build(pool, []int32{0}, Options{Segments: 3, Negatives: 5, Sample: n, CentredCeiling: true}); err == nil {
		t.Error("a centred ceiling without a ceiling was accepted")
	}
}
