package evaluate

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

// A query's list: the best hits in BM25 order, itself left out, positives past the cap passed over and the
// list filled with the next negatives; ties go to the lower row.
func TestSRCandidates(t *testing.T) {
	//            0    1    2    3    4    5    6    7
	labels := []string{"a", "a", "a", "a", "b", "c", "b", "a"}
	hits := []Scored{{0, 10}, {1, 9}, {2, 8}, {3, 7}, {4, 6}, {5, 5}, {6, 5}, {7, 1}}
	for _, tc := range []struct {
		name        string
		hits        []Scored
		size, maxP  int
		rows, flags string
	}{
		{"cap at 2 positives, filled with negatives", hits, 4, 2, "[1 2 4 5]", "[true true false false]"},
		{"cap not reached", hits, 4, 30, "[1 2 3 4]", "[true true true false]"},
		{"tie to the lower row", hits, 5, 1, "[1 4 5 6]", "[true false false false]"},
		{"fewer hits than the size", hits[:3], 100, 30, "[1 2]", "[true true]"},
		{"hits in any order", []Scored{{6, 5}, {4, 6}, {0, 10}, {5, 5}, {1, 9}}, 3, 30, "[1 4 5]", "[true false false]"},
		{"no positive", []Scored{{0, 3}, {4, 2}, {5, 1}}, 100, 30, "[4 5]", "[false false]"},
	} {
		l := srCandidates(tc.hits, 0, labels, tc.size, tc.maxP)
		if fmt.Sprint(l.Rows) != tc.rows || fmt.Sprint(l.Positive) != tc.flags || l.Query != 0 {
			t.Errorf("%s: rows %v %v, want %s %s", tc.name, l.Rows, l.Positive, tc.rows, tc.flags)
		}
	}
}

// 30 positives at most of 100 candidates, in a pool where 100 texts share the query's label and 100 others
// share words with it: the list takes the 30 best positives and fills up with 70 negatives.
func TestSRListsCapAtThirty(t *testing.T) {
	p := &SRPool{Dataset: "toy"}
	for i := range 100 {
		p.Texts, p.Labels = append(p.Texts, fmt.Sprintf("book a cab number %d", i)), append(p.Labels, "request(taxi)")
	}
	for i := range 100 {
		p.Texts, p.Labels = append(p.Texts, fmt.Sprintf("book a table number %d", i)), append(p.Labels, "request(reservation)")
	}
	lists, dropped, err := SRLists(p, NewBM25(p.Texts, BM25K1, BM25B), DefaultSRSampling, 0)
	if err != nil || dropped != 0 || len(lists) != len(p.Texts) {
		t.Fatalf("%d lists, %d dropped, %v; want every one of the %d texts a query", len(lists), dropped, err, len(p.Texts))
	}
	for _, l := range lists {
		if len(l.Rows) != 100 || l.Positives() != 30 {
			t.Fatalf("query %d: %d candidates, %d positive; want 100, 30", l.Query, len(l.Rows), l.Positives())
		}
	}
}

// Queries are drawn with the seed (the same seed, the same queries); one whose label no other text has, or
// which shares no term with another text, is dropped and counted.
func TestSRListsDropsQueriesWithoutPositives(t *testing.T) {
	p := &SRPool{Dataset: "toy",
		Texts:  []string{"go to the airport", "ride to the airport", "table for the two", "lonely label the text", "xyz qwe rty"},
		Labels: []string{"a", "a", "b", "c", "a"}}
	index := NewBM25(p.Texts, BM25K1, BM25B)
	all := SRSampling{Queries: 100, Size: 10, MaxPositives: 30}
	lists, dropped, err := SRLists(p, index, all, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Dropped: row 2 (label b alone), row 3 (c alone), row 4 (its label a is shared, but it shares no term).
	var queries []int
	for _, l := range lists {
		queries = append(queries, l.Query)
	}
	if dropped != 3 || len(lists) != 2 || fmt.Sprint(queries) != "[0 1]" && fmt.Sprint(queries) != "[1 0]" {
		t.Errorf("kept queries %v, dropped %d; want rows 0 and 1 kept, 3 dropped", queries, dropped)
	}
	two := SRSampling{Queries: 2, Size: 10, MaxPositives: 30}
	a, _, _ := SRLists(p, index, two, 7)
	b, _, _ := SRLists(p, index, two, 7)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the same seed gave %v, then %v", a, b)
	}
	if _, _, err := SRLists(p, index, SRSampling{Queries: 0, Size: 10, MaxPositives: 30}, 0); err == nil {
		t.Error("0 queries: want an error")
	}
}

// Every query of a four-text pool (all share "the") re-ranks the other three by cosine; by hand, with unit
// vectors a0 = (1,0), a1 = (0.8,0.6), b0 = (0,1), b1 = (0.6,0.8):
//
//	a0: a1 0.8, b0 0, b1 0.6         -> the positive first:   AP = RR = 1
//	a1: a0 0.8, b0 0.6, b1 0.96      -> the positive second:  AP = RR = 1/2
//	b0: a0 0, a1 0.6, b1 0.8         -> first:                AP = RR = 1
//	b1: a0 0.6, a1 0.96, b0 0.8      -> second:               AP = RR = 1/2
//
// so MAP = MRR = 0.75 whatever the seed. The fifth text shares no term: dropped, and never embedded (the
// encoder has no vector for it).
func TestSRByHand(t *testing.T) {
	enc := &tableEncoder{vecs: map[string][]float32{
		"go to the airport": {1, 0}, "ride to the airport": {0.8, 0.6}, "table for the two": {0, 1}, "table at the five": {0.6, 0.8},
	}}
	p := &SRPool{Dataset: "toy", Source: "toy.tsv",
		Texts:  []string{"go to the airport", "ride to the airport", "table for the two", "table at the five", "xyz qwe rty"},
		Labels: []string{"a", "a", "b", "b", "a"}}
	s := &Session{Model: "table", Enc: enc}
	res, err := s.SR(context.Background(), SRTask{Pool: p, Sampling: SRSampling{Queries: 10}, Seeds: []uint64{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Task != "sr" {
		t.Fatalf("rows %+v", res.Rows)
	}
	for i, metric := range []string{"map", "mrr"} {
		r := res.Rows[i]
		if r.Metric != metric || r.Dataset != "toy" || r.Variant != "bm25-100" || len(r.Values) != 2 || math.Abs(r.Mean-0.75) > 1e-9 || r.Std > 1e-9 {
			t.Errorf("row %+v, want %s = 0.75 for both seeds", r, metric)
		}
	}
	st := res.Rows[0].Settings
	if fmt.Sprint(st["queries_kept"], st["queries_dropped"], st["pool"], st["labels"]) != "[4 4] [1 1] 5 2" {
		t.Errorf("settings %v", st)
	}
	if enc.calls != 4 {
		t.Errorf("embedded %d texts, want the 4 in some list", enc.calls)
	}
	if len(res.Notes) != 3 || !strings.Contains(res.Notes[1], "dropped [1 1]") || !strings.Contains(res.Notes[2], "annotators") {
		t.Errorf("notes %q", res.Notes)
	}
}

func TestSRRefusesBeforeEmbedding(t *testing.T) {
	enc := &tableEncoder{}
	pool := &SRPool{Dataset: "toy", Texts: []string{"a b c", "a b d"}, Labels: []string{"x", "x"}}
	noPositive := &SRPool{Dataset: "toy", Texts: []string{"a b c", "a b d"}, Labels: []string{"x", "y"}}
	for _, tc := range []struct {
		name string
		s    *Session
		task SRTask
		want string
	}{
		{"no pool", &Session{Enc: enc}, SRTask{Seeds: []uint64{0}}, "fewer than 2 texts"},
		{"texts and labels differ", &Session{Enc: enc}, SRTask{Pool: &SRPool{Texts: []string{"a", "b"}, Labels: []string{"x"}}, Seeds: []uint64{0}}, "2 texts but 1 labels"},
		{"no seeds", &Session{Enc: enc}, SRTask{Pool: pool}, "no seeds"},
		{"raw session", &Session{Enc: enc, Raw: true}, SRTask{Pool: pool, Seeds: []uint64{0}}, "Raw"},
		{"no query with a positive", &Session{Enc: enc}, SRTask{Pool: noPositive, Seeds: []uint64{0}}, "none of the 2 queries has a positive"},
		{"bad sampling", &Session{Enc: enc}, SRTask{Pool: pool, Sampling: SRSampling{Size: -1}, Seeds: []uint64{0}}, "want at least 1 each"},
	} {
		_, err := tc.s.SR(context.Background(), tc.task)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
		if enc.calls != 0 {
			t.Errorf("%s: %d texts embedded before the error", tc.name, enc.calls)
		}
	}
}
