package evaluate

import (
	"fmt"
	"math"
	"testing"
)

// BM25 on a three-document corpus, against numbers computed by hand with k1 = 1.2, b = 0.75:
//
//	d0 "The cat sat."             terms the, cat, sat               |d0| = 3
//	d1 "the dog sat on the mat"   terms the, dog, sat, on, the, mat |d1| = 6
//	d2 "Cats and dogs!"           terms cats, and, dogs             |d2| = 3   avgdl = 12/3 = 4, N = 3
//
//	IDF(the) = ln(1 + (3−2+0.5)/(2+0.5)) = ln 1.6    = 0.4700036
//	IDF(cat) = ln(1 + (3−1+0.5)/(1+0.5)) = ln(8/3)   = 0.9808293
//	IDF(sat) = IDF(the);  IDF(dogs) = IDF(cat)
//	d0: norm = 1.2·(0.25 + 0.75·3/4) = 0.975; a term with f = 1 gives 2.2/1.975 = 1.1139241
//	d1: norm = 1.2·(0.25 + 0.75·6/4) = 1.65;  "the" (f = 2) gives 4.4/3.65 = 1.2054795, "sat" (f = 1) 2.2/2.65 = 0.8301887
//	d2: norm = 0.975 as d0
//
// "the cat": d0 = 1.1139241·(0.4700036 + 0.9808293) = 1.6161176; d1 = 1.2054795·0.4700036 = 0.5665797; d2 shares
// no term ("cats" is not "cat") and is not retrieved.
// "SAT sat dogs": "sat" counts once; d0 = 1.1139241·0.4700036 = 0.5235484, d1 = 0.8301887·0.4700036 = 0.3901917,
// d2 = 1.1139241·0.9808293 = 1.0925693.
func TestBM25ByHand(t *testing.T) {
	x := NewBM25([]string{"The cat sat.", "the dog sat on the mat", "Cats and dogs!"}, BM25K1, BM25B)
	for _, tc := range []struct {
		query string
		want  []Scored
	}{
		{"the cat", []Scored{{0, 1.6161176}, {1, 0.5665797}}},
		{"SAT sat dogs", []Scored{{0, 0.5235484}, {1, 0.3901917}, {2, 1.0925693}}},
		{"bird", nil},
		{"", nil},
	} {
		got := x.Score(tc.query)
		ok := len(got) == len(tc.want)
		for i := range got {
			ok = ok && got[i].Doc == tc.want[i].Doc && math.Abs(got[i].Score-tc.want[i].Score) < 1e-6
		}
		if !ok {
			t.Errorf("%q: scores %v, want %v", tc.query, got, tc.want)
		}
	}
	// The scratch space is clean between calls: the same query scores the same again.
	if a, b := fmt.Sprint(x.Score("the cat")), fmt.Sprint(x.Score("the cat")); a != b {
		t.Errorf("a second call scored %s, the first %s", b, a)
	}
}

func TestBM25Terms(t *testing.T) {
	for in, want := range map[string]string{
		"I'd like 2 tickets!":           "[i d like 2 tickets]",
		"  Zoolander-2 at 9:25PM ":      "[zoolander 2 at 9 25pm]",
		"Café “Deadpool” tonight":       "[café deadpool tonight]",
		"...":                           "[]",
		"request(moviename;city=Houma)": "[request moviename city houma]",
	} {
		if got := fmt.Sprint(bm25Terms(in)); got != want {
			t.Errorf("bm25Terms(%q) = %s, want %s", in, got, want)
		}
	}
}
