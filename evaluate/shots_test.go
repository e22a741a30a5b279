package evaluate

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// halfOfTwoK is the rule SampleSupport followed before the support set was made to hold k rows: min(2k, n)
// rows drawn, the first ceil(m/2) kept. The figures pinned in evaluate, evaluate/suite and claims were
// computed with it.
func halfOfTwoK(train Split, k int, seed uint64) []Support {
	byLabel := map[string][]int{}
	for i, e := range train {
		byLabel[e.Label] = append(byLabel[e.Label], i)
	}
	g := newRNG(seed, supportStream)
	var out []Support
	for _, label := range train.Labels() {
		rows := byLabel[label]
		m := min(2*k, len(rows))
		picked := draw(g, len(rows), m)
		keep := make([]int, (m+1)/2)
		for i := range keep {
			keep[i] = rows[picked[i]]
		}
		out = append(out, Support{Label: label, Rows: keep})
	}
	return out
}

// fivePerLabel is a user's training file of 5 rows for each of 3 labels, interleaved.
func fivePerLabel() Split {
	var s Split
	for i := range 5 {
		for _, l := range []string{"refund", "cancel", "track"} {
			s = append(s, Example{Text: fmt.Sprintf("%s %d", l, i), Label: l})
		}
	}
	return s
}

// The case (5 rows per label, --shots 5,20) and its neighbours: the support set holds the k asked
// where a label has k rows; a label with fewer is listed with its count; a k no label can fill is refused
// with the largest that can be.
func TestShotsOnAUserFile(t *testing.T) {
	uneven := append(fivePerLabel()[:12], Example{"refund 9", "refund"}) // refund 5, cancel 4, track 4
	for _, tc := range []struct {
		name    string
		train   Split
		shots   []int
		refused string                 // part of CheckShots's error; "" for none
		short   map[int][]LabelRows    // Shortfall per k
		support map[int]map[string]int // rows per label SampleSupport keeps, every seed
	}{
		{name: "5 rows per label, --shots 5,20", train: fivePerLabel(), shots: []int{5, 20},
			refused: "20-shot: no label has 20 training rows (the most any label has is 5), so no support set could hold 20: the largest shot count that can be filled is 5"},
		{name: "5 rows per label, --shots 5", train: fivePerLabel(), shots: []int{5},
			short:   map[int][]LabelRows{5: nil},
			support: map[int]map[string]int{5: {"refund": 5, "cancel": 5, "track": 5}}},
		{name: "5 rows per label, --shots 3,4 (fewer than 2k rows: still k)", train: fivePerLabel(), shots: []int{3, 4},
			short:   map[int][]LabelRows{3: nil, 4: nil},
			support: map[int]map[string]int{3: {"refund": 3, "cancel": 3, "track": 3}, 4: {"refund": 4, "cancel": 4, "track": 4}}},
		{name: "uneven, --shots 5", train: uneven, shots: []int{5},
			short:   map[int][]LabelRows{5: {{"cancel", 4}, {"track", 4}}},
			support: map[int]map[string]int{5: {"refund": 5, "cancel": 4, "track": 4}}},
		{name: "uneven, --shots 6", train: uneven, shots: []int{1, 6}, refused: "6-shot: no label has 6 training rows (the most any label has is 5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckShots(tc.train, tc.shots)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("CheckShots: %v, want an error containing %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.short {
				if got := Shortfall(tc.train, k); !reflect.DeepEqual(got, want) {
					t.Errorf("Shortfall(k=%d) = %v, want %v", k, got, want)
				}
			}
			for k, want := range tc.support {
				var seeds [][]Support
				for seed := range uint64(10) {
					sets, err := SampleSupport(tc.train, k, seed)
					if err != nil {
						t.Fatal(err)
					}
					got := map[string]int{}
					for _, s := range sets {
						got[s.Label] = len(s.Rows)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("k=%d seed=%d: rows per label %v, want %v", k, seed, got, want)
					}
					seeds = append(seeds, sets)
				}
				u := UsedShots(tc.train.Labels(), k, seeds)
				wantShort := map[string]int{}
				lo, hi := k, 0
				for l, n := range want {
					lo, hi = min(lo, n), max(hi, n)
					if n < k {
						wantShort[l] = n
					}
				}
				if len(wantShort) == 0 {
					wantShort = nil
				}
				if wantUsed := (ShotsUsed{Min: lo, Max: hi, Short: wantShort}); !reflect.DeepEqual(u, wantUsed) {
					t.Errorf("k=%d: UsedShots = %+v, want %+v", k, u, wantUsed)
				}
			}
		})
	}
}

// Support sets read from a split file may leave a label out or hold fewer rows in one seed: UsedShots counts
// what each seed's sets held, a missing label as 0.
func TestUsedShotsOfReadSets(t *testing.T) {
	labels := []string{"a", "b", "c"}
	seeds := [][]Support{
		{{"a", []int{0, 1}}, {"b", []int{2, 3}}, {"c", []int{4, 5}}},
		{{"a", []int{0, 1}}, {"b", []int{2}}},
	}
	want := ShotsUsed{Min: 0, Max: 2, Short: map[string]int{"b": 1, "c": 0}}
	if got := UsedShots(labels, 2, seeds); !reflect.DeepEqual(got, want) {
		t.Errorf("UsedShots = %+v, want %+v", got, want)
	}
}

func TestListLabelRows(t *testing.T) {
	ls := []LabelRows{{"a", 1}, {"b c", 2}, {"d", 3}}
	if got, want := ListLabelRows(ls, 5), `"a" (1), "b c" (2), "d" (3)`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := ListLabelRows(ls, 2), `"a" (1), "b c" (2), and 1 more`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Session.Intent records the shots used in every row and, where a label fell short, says so in a note; on a
// set where every label fills k the note is absent and shots_used is k, k. A k no label fills is refused
// before anything is embedded.
func TestIntentRecordsShotsUsed(t *testing.T) {
	enc := &tableEncoder{vecs: map[string][]float32{}}
	train := append(fivePerLabel()[:12], Example{"refund 9", "refund"}) // refund 5, cancel 4, track 4
	test := Split{{"q refund", "refund"}, {"q cancel", "cancel"}, {"q track", "track"}}
	for i, e := range append(append(Split{}, train...), test...) {
		enc.vecs[e.Text] = []float32{float32(i%3) + 1, float32(len(e.Label))}
	}
	s := &Session{Model: "table", Enc: enc}
	res, err := s.Intent(context.Background(), IntentTask{Dataset: "mine", Train: train, Test: test, Shots: []int{4, 5}, Seeds: []uint64{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]ShotsUsed{4: {Min: 4, Max: 4}, 5: {Min: 4, Max: 5, Short: map[string]int{"cancel": 4, "track": 4}}}
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(res.Rows))
	}
	for _, r := range res.Rows {
		k := r.Settings["shots"].(int)
		if got := r.Settings["shots_used"]; !reflect.DeepEqual(got, want[k]) {
			t.Errorf("%s: shots_used %+v, want %+v", r.Variant, got, want[k])
		}
	}
	wantNote := `mine 5-shot: 2 of 3 labels got fewer than 5 support rows (all the training rows they have): "cancel" (4), "track" (4)`
	if len(res.Notes) != 1 || !strings.HasPrefix(res.Notes[0], wantNote) {
		t.Errorf("notes %q, want one starting %q", res.Notes, wantNote)
	}
	enc.calls = 0
	_, err = s.Intent(context.Background(), IntentTask{Dataset: "mine", Train: train, Test: test, Shots: []int{5, 20}, Seeds: []uint64{0}})
	if err == nil || !strings.Contains(err.Error(), "the largest shot count that can be filled is 5") || enc.calls != 0 {
		t.Errorf("--shots 5,20: error %v after %d texts embedded; want the refusal before any", err, enc.calls)
	}
}
