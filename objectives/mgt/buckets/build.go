package buckets

import (
	"cmp"
	"convrep/datasets"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Options size the negatives Build draws.
type Options struct {
	Segments  int   // L: how many granularities (§4.2: 5)
	Negatives int   // k−1 per example and segment
	Sample    int   // S: responses scored per example to place the segment boundaries (see the package comment)
	Seed      int64 // fixes every draw
	Workers   int   // goroutines; 0 = GOMAXPROCS
	// Near-duplicates of the ground truth are left out of its segments when set, so that a paraphrase of the
	// answer is never drawn as its negative (not in the paper, which excludes the ground truth's own text
	// only): a response whose cosine with the ground truth is at least Ceiling (0: no ceiling), and one whose
	// Twins class is the ground truth's (Twins[i] is response i's class of normalised text, NormalisedTwins;
	// nil: none). With CentredCeiling the ceiling reads the cosine of the centred embeddings (Centred), for an
	// encoder whose raw cosines all lie near 1; the segments are still ordered by the raw cosine (Eq. 11).
	Ceiling        float32
	CentredCeiling bool
	Twins          []int32
}

func (o Options) check(poolSize int) error {
	switch {
	case o.Segments < 1 || o.Negatives < 1:
		return fmt.Errorf("buckets: %d segments of %d negatives: both must be positive", o.Segments, o.Negatives)
	case o.Sample < o.Segments*o.Negatives:
		return fmt.Errorf("buckets: a sample of %d cannot give %d segments %d distinct negatives each", o.Sample, o.Segments, o.Negatives)
	case poolSize-1 < o.Segments:
		return fmt.Errorf("buckets: a pool of %d responses cannot fill %d segments", poolSize, o.Segments)
	case o.Workers < 0:
		return fmt.Errorf("buckets: %d workers", o.Workers)
	case o.Ceiling < 0 || o.Ceiling > 1:
		return fmt.Errorf("buckets: a cosine ceiling of %v is outside [0, 1]", o.Ceiling)
	case o.CentredCeiling && o.Ceiling == 0:
		return fmt.Errorf("buckets: a centred ceiling needs a ceiling")
	case o.Twins != nil && len(o.Twins) != poolSize:
		return fmt.Errorf("buckets: %d twin classes for a pool of %d responses", len(o.Twins), poolSize)
	}
	return nil
}

// Key is what identifies the negatives these options draw from a given pool and ground truths: every field
// but Workers (which changes nothing), the twin classes by whether there are any (they follow from the pool).
func (o Options) Key() string {
	// "each": the twins and the ceiling leave the sample each on its own (Build); negatives cached when one that
	// would empty it cancelled both are stale.
	key := fmt.Sprintf("segments=%d negatives=%d sample=%d seed=%d ceiling=%g twins=%v exclusion=each", o.Segments, o.Negatives, o.Sample, o.Seed, o.Ceiling, o.Twins != nil)
	if o.CentredCeiling {
		key += " ceiling=centred"
	}
	return key
}

// Negatives are the negatives drawn for each example: Idx[(e·Segments + l−1)·PerSegment + j] is the pool
// index of negative j of example e in segment l (1 = the closest to the ground truth). Excluded counts the
// sampled responses left out as near-duplicates of their ground truth (Options.Ceiling, Options.Twins) when
// Build drew them (a cached copy does not keep it); FellBack, the examples for which a criterion was not applied
// because fewer responses than segments would have remained.
type Negatives struct {
	Examples, Segments, PerSegment int
	Idx                            []int32
	Excluded, FellBack             int64
}

// Of returns example e's negatives from segment l (1-based).
func (n *Negatives) Of(e, l int) []int32 {
	at := (e*n.Segments + l - 1) * n.PerSegment
	return n.Idx[at : at+n.PerSegment]
}

// Build draws, for each example e with ground truth gts[e] (a pool index), opt.Negatives distinct negatives
// from each of opt.Segments segments of the other responses ordered by cosine similarity to the ground
// truth, most similar first (MGT Eq. 12; the package comment says how the segments are placed).
func Build(p *Pool, gts []int32, opt Options) (*Negatives, error) {
	if err := opt.check(p.N); err != nil {
		return nil, err
	}
	for e, g := range gts {
		if g < 0 || int(g) >= p.N {
			return nil, fmt.Errorf("buckets: example %d: ground truth %d outside the pool of %d", e, g, p.N)
		}
	}
	out := &Negatives{Examples: len(gts), Segments: opt.Segments, PerSegment: opt.Negatives,
		Idx: make([]int32, len(gts)*opt.Segments*opt.Negatives)}
	ceil := p // the embeddings the ceiling's cosine is measured in
	if opt.CentredCeiling {
		ceil = Centred(p)
	}
	workers := opt.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(gts)))
	var wg sync.WaitGroup
	excluded, fellBack := make([]int64, workers), make([]int64, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s := newScratch(p.N, opt.Sample)
			for e := w; e < len(gts); e += workers {
				n, fell := s.example(p, ceil, gts[e], opt, uint64(e), out)
				excluded[w] += int64(n)
				if fell {
					fellBack[w]++
				}
			}
		}(w)
	}
	wg.Wait()
	for w := range excluded {
		out.Excluded += excluded[w]
		out.FellBack += fellBack[w]
	}
	return out, nil
}

// scored is one sampled response and its cosine with the ground truth.
type scored struct {
	sim float32
	idx int32
}

// scratch is one worker's memory: O(S) plus a bitmap of the pool.
type scratch struct {
	mark   []uint64 // responses already in this example's sample
	sample []scored
	kept   []scored // the sample without the ground truth's near-duplicates
	pick   []int32
}

func newScratch(n, sample int) *scratch {
	return &scratch{mark: make([]uint64, (n+63)/64), sample: make([]scored, 0, min(sample, n)), kept: make([]scored, 0, min(sample, n)),
		pick: make([]int32, 0, sample)}
}

// example fills example e's negatives in out, and returns how many sampled responses it left out as
// near-duplicates of the ground truth, and whether a criterion was not applied for lack of responses. ceil holds
// the embeddings whose cosine the ceiling reads (p itself unless Options.CentredCeiling).
func (s *scratch) example(p, ceil *Pool, gt int32, opt Options, e uint64, out *Negatives) (int, bool) {
	g := generator(opt.Seed, 0, e)
	s.draw(p.N, gt, opt.Sample, g)
	v := p.Row(int(gt))
	for i := range s.sample {
		s.sample[i].sim = dot(v, p.Row(int(s.sample[i].idx)))
	}
	// The ground truth's near-duplicates leave the sample: its normalised-text twins first, then what reaches the
	// cosine ceiling. A criterion that would leave fewer responses than segments (a pool of repeats, or a ceiling
	// below the encoder's similarities) is not applied, and the example counts as fallen back; the other still is.
	excluded, fellBack := 0, false
	if opt.Twins != nil {
		n, ok := s.keepOnly(func(x scored) bool { return opt.Twins[x.idx] != opt.Twins[gt] }, opt.Segments)
		excluded, fellBack = excluded+n, fellBack || !ok
	}
	if opt.Ceiling > 0 {
		below := func(x scored) bool { return x.sim < opt.Ceiling } // the raw cosine, computed above
		if ceil != p {
			c := ceil.Row(int(gt))
			below = func(x scored) bool { return dot(c, ceil.Row(int(x.idx))) < opt.Ceiling }
		}
		n, ok := s.keepOnly(below, opt.Segments)
		excluded, fellBack = excluded+n, fellBack || !ok
	}
	// Most similar first; equal scores by index, so the order is fixed.
	slices.SortFunc(s.sample, func(a, b scored) int {
		if c := cmp.Compare(b.sim, a.sim); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
	m := len(s.sample)
	for l := 0; l < opt.Segments; l++ {
		seg := s.sample[l*m/opt.Segments : (l+1)*m/opt.Segments]
		dst := out.Of(int(e), l+1)
		s.pick = s.pick[:0]
		for _, x := range seg {
			s.pick = append(s.pick, x.idx)
		}
		// A partial Fisher–Yates shuffle: the first k−1 are a uniform draw without replacement.
		for j := range dst {
			if j >= len(s.pick) { // a segment smaller than k−1 (tiny pools only): draw again from it
				dst[j] = s.pick[datasets.BoundedDraw(g, uint64(len(s.pick)))]
				continue
			}
			r := j + datasets.BoundedDraw(g, uint64(len(s.pick)-j))
			s.pick[j], s.pick[r] = s.pick[r], s.pick[j]
			dst[j] = s.pick[j]
		}
	}
	return excluded, fellBack
}

// keepOnly drops from the sample the responses keep rejects, unless fewer than min would remain: it returns how
// many it dropped and whether it did.
func (s *scratch) keepOnly(keep func(scored) bool, min int) (int, bool) {
	s.kept = s.kept[:0]
	for _, x := range s.sample {
		if keep(x) {
			s.kept = append(s.kept, x)
		}
	}
	if len(s.kept) < min {
		return 0, false
	}
	n := len(s.sample) - len(s.kept)
	s.sample, s.kept = s.kept, s.sample
	return n, true
}

// NormalisedTwins gives each response of the pool a class: responses whose texts are equal once lower-cased,
// stripped of everything but letters and digits and with their words single-spaced share one ("Anything
// else?" and "anything else ." do). Classes are numbered in first-seen order.
func NormalisedTwins(pool []string) []int32 {
	classes := make([]int32, len(pool))
	seen := map[string]int32{}
	var b strings.Builder
	for i, text := range pool {
		b.Reset()
		space := false
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r):
				if space && b.Len() > 0 {
					b.WriteByte(' ')
				}
				space = false
				b.WriteRune(r)
			default:
				space = true
			}
		}
		c, ok := seen[b.String()]
		if !ok {
			c = int32(len(seen))
			seen[b.String()] = c
		}
		classes[i] = c
	}
	return classes
}

// draw fills s.sample with min(S, n−1) distinct pool indices other than gt, uniformly; all of them when the
// pool is no larger than the sample.
func (s *scratch) draw(n int, gt int32, size int, g *rand.PCG) {
	s.sample = s.sample[:0]
	if n-1 <= size {
		for i := 0; i < n; i++ {
			if int32(i) != gt {
				s.sample = append(s.sample, scored{idx: int32(i)})
			}
		}
		return
	}
	s.mark[gt/64] |= 1 << (gt % 64)
	for len(s.sample) < size {
		i := int32(datasets.BoundedDraw(g, uint64(n)))
		if s.mark[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		s.mark[i/64] |= 1 << (i % 64)
		s.sample = append(s.sample, scored{idx: i})
	}
	for _, x := range s.sample {
		s.mark[x.idx/64] = 0
	}
	s.mark[gt/64] = 0
}
