package evaluate

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

// tableEncoder embeds each text as the vector it was given, and counts the texts it embedded.
type tableEncoder struct {
	vecs  map[string][]float32
	calls int
}

func (e *tableEncoder) Embed(texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := e.vecs[t]
		if !ok {
			return nil, fmt.Errorf("no vector for %q", t)
		}
		out[i] = v
	}
	e.calls += len(texts)
	return out, nil
}

// Two intents on the unit circle: "a" near angle 0, "b" near 90 degrees.
func intentFixture() (*tableEncoder, Split, Split) {
	enc := &tableEncoder{vecs: map[string][]float32{
		"a1": {2, 0}, "a2": {0, 1}, // a2 points at b: a bad support example
		"b1": {0, 3}, "b2": {0.1, 1},
		"qa": {1, 0.2}, "qb": {0.2, 1}, "qx": {1, 1.2},
	}}
	train := Split{{"a1", "a"}, {"b1", "b"}, {"a2", "a"}, {"b2", "b"}}
	test := Split{{"qa", "a"}, {"qb", "b"}, {"qx", "a"}}
	return enc, train, test
}

func TestIntentByHand(t *testing.T) {
	enc, train, test := intentFixture()
	s := &Session{Model: "table", Enc: enc}
	// 1-shot: each label draws min(2, 2) rows and keeps one, a2 (a bad example) for some seeds; the expectation
	// is computed from the drawn support.
	seeds := []uint64{0, 1, 2, 3}
	res, err := s.Intent(context.Background(), IntentTask{Dataset: "toy", Train: train, Test: test, Shots: []int{1}, Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0].Metric != "accuracy" || len(res.Rows[0].Values) != len(seeds) {
		t.Fatalf("rows = %+v", res.Rows)
	}
	for i, seed := range seeds {
		sets, _ := SampleSupport(train, 1, seed)
		// Expected by hand: normalise, average per label, argmax of dot products.
		unit := func(v []float32) (x, y float64) {
			n := math.Hypot(float64(v[0]), float64(v[1]))
			return float64(v[0]) / n, float64(v[1]) / n
		}
		protos := map[string][2]float64{}
		for _, st := range sets {
			var px, py float64
			for _, r := range st.Rows {
				x, y := unit(enc.vecs[train[r].Text])
				px += x / float64(len(st.Rows))
				py += y / float64(len(st.Rows))
			}
			protos[st.Label] = [2]float64{px, py}
		}
		correct := 0
		for _, q := range test {
			x, y := unit(enc.vecs[q.Text])
			sa := x*protos["a"][0] + y*protos["a"][1]
			sb := x*protos["b"][0] + y*protos["b"][1]
			pred := "a"
			if sb > sa {
				pred = "b"
			}
			if pred == q.Label {
				correct++
			}
		}
		want := float64(correct) / float64(len(test))
		if got := res.Rows[0].Values[i]; math.Abs(got-want) > 1e-12 {
			t.Errorf("seed %d: accuracy %v, want %v (support %+v)", seed, got, want, sets)
		}
	}
}

func TestIntentEmbedsEachTextOnce(t *testing.T) {
	enc, train, test := intentFixture()
	s := &Session{Model: "table", Enc: enc}
	task := IntentTask{Dataset: "toy", Train: train, Test: test, Shots: []int{1, 2}, Seeds: []uint64{0, 1, 2}}
	if _, err := s.Intent(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if enc.calls > len(train)+len(test) {
		t.Errorf("embedded %d texts, at most %d distinct", enc.calls, len(train)+len(test))
	}
	before := enc.calls
	if _, err := s.Intent(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if enc.calls != before {
		t.Errorf("a second run embedded %d more texts, want 0 (cached)", enc.calls-before)
	}
}

func TestTasksRefuseBeforeEmbedding(t *testing.T) {
	enc, train, test := intentFixture()
	unknown := append(Split{}, test...)
	unknown = append(unknown, Example{"qx", "c"})
	cases := []struct {
		name string
		run  func(s *Session) error
		want string
	}{
		{"class with no training example", func(s *Session) error {
			_, err := s.Intent(context.Background(), IntentTask{Dataset: "toy", Train: train, Test: unknown, Shots: []int{1}, Seeds: []uint64{0}})
			return err
		}, `label "c" has no training example`},
		{"empty training split", func(s *Session) error {
			_, err := s.Intent(context.Background(), IntentTask{Dataset: "toy", Test: test, Shots: []int{1}, Seeds: []uint64{0}})
			return err
		}, "0 training"},
		{"no seeds", func(s *Session) error {
			_, err := s.Intent(context.Background(), IntentTask{Dataset: "toy", Train: train, Test: test, Shots: []int{1}})
			return err
		}, "no seeds"},
		{"oos without out-of-scope queries", func(s *Session) error {
			_, err := s.OOS(context.Background(), OOSTask{Dataset: "toy", Train: train, Test: test, Shots: []int{1}, Seeds: []uint64{0}})
			return err
		}, "0 out-of-scope"},
		{"oos without a protocol", func(s *Session) error {
			_, err := s.OOS(context.Background(), OOSTask{Dataset: "toy", Train: train, Test: test, OOS: Split{{"qx", "oos"}}, Shots: []int{1}, Seeds: []uint64{0}})
			return err
		}, `protocol ""`},
		{"authors' oos without out-of-scope training rows", func(s *Session) error {
			_, err := s.OOS(context.Background(), OOSTask{Dataset: "toy", Train: train, Test: test, OOS: Split{{"qx", "oos"}}, Protocol: OOSAuthors,
				Shots: []int{1}, Seeds: []uint64{0}})
			return err
		}, "151st prototype"},
		{"authors' oos training rows with an in-scope label", func(s *Session) error {
			_, err := s.OOS(context.Background(), OOSTask{Dataset: "toy", Train: train, Test: test, OOS: Split{{"qx", "oos"}}, Protocol: OOSAuthors,
				OOSTrain: Split{{"a1", "a"}}, Shots: []int{1}, Seeds: []uint64{0}})
			return err
		}, `label "a"`},
		{"missing split file", func(s *Session) error {
			_, err := s.Intent(context.Background(), IntentTask{Dataset: "toy", Train: train, Test: test, Shots: []int{1}, Seeds: []uint64{0},
				Splits: SplitIO{Read: t.TempDir()}})
			return err
		}, "no such file"},
		{"response set with an empty context", func(s *Session) error {
			set := &RetrievalSet{Dataset: "toy", Contexts: [][]string{{"qa"}, {}}, Responses: []string{"a1", "b1"}}
			_, err := s.Response(context.Background(), ResponseTask{Set: set, Size: 2, Seeds: []uint64{0}})
			return err
		}, "empty context"},
		{"too few responses for the candidates", func(s *Session) error {
			set := &RetrievalSet{Dataset: "toy", Contexts: [][]string{{"qa"}, {"qb"}}, Responses: []string{"a1", "b1"}}
			_, err := s.Response(context.Background(), ResponseTask{Set: set, Size: 5, Seeds: []uint64{0}})
			return err
		}, "want 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			enc.calls = 0
			err := c.run(&Session{Model: "table", Enc: enc})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if enc.calls != 0 {
				t.Errorf("%d texts embedded before the error", enc.calls)
			}
		})
	}
}

func TestOOSByHand(t *testing.T) {
	enc, train, test := intentFixture()
	enc.vecs["o1"] = []float32{-1, -1}  // similar to nothing
	enc.vecs["o2"] = []float32{1, -0.1} // close to a: a false in-scope
	s := &Session{Model: "table", Enc: enc}
	oos := Split{{"o1", "oos"}, {"o2", "oos"}}
	res, err := s.OOS(context.Background(), OOSTask{Dataset: "toy", Train: train, Test: test, OOS: oos, Protocol: OOSPaper, Shots: []int{1}, Seeds: []uint64{5}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 8 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "test queries") || !strings.Contains(res.Notes[0], `"paper"`) {
		t.Fatalf("%d rows, notes %q", len(res.Rows), res.Notes)
	}
	// Recompute from the pieces, which have their own hand-made tests.
	sets, _ := SampleSupport(train, 1, 5)
	sup := map[int][]float32{}
	for _, st := range sets {
		for _, r := range st.Rows {
			sup[r] = normalized(enc.vecs[train[r].Text])
		}
	}
	all := append(append(Split{}, test...), oos...)
	var q [][]float32
	for _, e := range all {
		q = append(q, normalized(enc.vecs[e.Text]))
	}
	pred, best, _ := AssignPrototypes(similarities(q, prototypes(train.Labels(), sets, sup, 2)))
	mean, _, _ := OOSThresholds(best)
	want, _ := OOSMetrics(pred, best, []int{0, 1, 0, OOS, OOS}, mean)
	got := map[string]float64{}
	for _, r := range res.Rows {
		if r.Variant == "1-shot, threshold=mean, paper" {
			got[r.Metric] = r.Mean
		}
	}
	if got["accuracy"] != want.Accuracy || got["oos_recall"] != want.OOSRecall || got["in_accuracy"] != want.InAccuracy {
		t.Errorf("got %v, want %+v", got, want)
	}
	if want.OOSRecall != 0.5 { // o1 is below the mean, o2 above it
		t.Errorf("oos recall %v, want 0.5 (best %v, mean %v)", want.OOSRecall, best, mean)
	}
}

func TestResponseByHand(t *testing.T) {
	enc := &tableEncoder{vecs: map[string][]float32{
		"q0": {1, 0}, "q1": {0, 1}, "q2": {1, 1},
		"r0": {1, 0}, "r1": {1, 0}, "r2": {-1, 0},
	}}
	set := &RetrievalSet{Dataset: "toy", Contexts: [][]string{{"q0"}, {"q1"}, {"q2"}}, Responses: []string{"r0", "r1", "r2"}}
	s := &Session{Model: "table", Enc: enc}
	res, err := s.Response(context.Background(), ResponseTask{Set: set, Size: 3, Seeds: []uint64{0}})
	if err != nil {
		t.Fatal(err)
	}
	// Every list holds all three responses. q0: r0 ties r1 at 1, pessimistic rank 2. q1: r1 scores 0, r0 ties
	// at 0, r2 scores 0: rank 3. q2: r2 scores -0.71, the others 0.71: rank 3.
	want := map[string]float64{"top1": 0, "top3": 1, "top10": 1, "mrr": (1.0/2 + 1.0/3 + 1.0/3) / 3}
	for _, r := range res.Rows {
		if math.Abs(r.Mean-want[r.Metric]) > 1e-12 {
			t.Errorf("%s = %v, want %v", r.Metric, r.Mean, want[r.Metric])
		}
	}
}

func TestSplitsReproduceARun(t *testing.T) {
	enc, train, test := intentFixture()
	dir := t.TempDir()
	task := IntentTask{Dataset: "toy", Source: "train.csv", Train: train, Test: test, Shots: []int{1, 2}, Seeds: []uint64{0, 1, 2, 3, 4},
		Splits: SplitIO{Write: dir}}
	first, err := (&Session{Model: "m", Enc: enc}).Intent(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	task.Splits = SplitIO{Read: dir}
	second, err := (&Session{Model: "m", Enc: enc}).Intent(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	for i := range first.Rows {
		if fmt.Sprint(first.Rows[i].Values) != fmt.Sprint(second.Rows[i].Values) {
			t.Errorf("row %d: %v then %v from the saved splits", i, first.Rows[i].Values, second.Rows[i].Values)
		}
	}
	// The same with response candidates.
	set := &RetrievalSet{Dataset: "toy", Contexts: [][]string{{"qa"}, {"qb"}, {"qx"}, {"a2"}}, Responses: []string{"a1", "b1", "b2", "a2"}}
	rt := ResponseTask{Set: set, Size: 3, Seeds: []uint64{7, 8}, Splits: SplitIO{Write: dir}}
	r1, err := (&Session{Model: "m", Enc: enc}).Response(context.Background(), rt)
	if err != nil {
		t.Fatal(err)
	}
	rt.Splits = SplitIO{Read: dir}
	r2, err := (&Session{Model: "m", Enc: enc}).Response(context.Background(), rt)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(r1.Rows) != fmt.Sprint(r2.Rows) {
		t.Errorf("response rows differ:\n%v\n%v", r1.Rows, r2.Rows)
	}
	rt.Size = 4 // no file was written for 4 candidates
	if _, err := (&Session{Model: "m", Enc: enc}).Response(context.Background(), rt); err == nil {
		t.Error("read 3-candidate splits for a 4-candidate run")
	}
}

// A Fresh session embeds again what the original had kept, with its own encoders, and the original keeps
// its cache.
func TestFreshSessionHasItsOwnCache(t *testing.T) {
	enc, _, _ := intentFixture()
	s := &Session{Model: "m", Enc: enc}
	ctx := context.Background()
	if _, err := s.Embed(ctx, []string{"a1", "b1"}); err != nil {
		t.Fatal(err)
	}
	other := &tableEncoder{vecs: enc.vecs}
	f := s.Fresh()
	f.Enc = other
	if _, err := f.Embed(ctx, []string{"a1", "b1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Embed(ctx, []string{"a1", "b1"}); err != nil {
		t.Fatal(err)
	}
	if enc.calls != 2 || other.calls != 2 {
		t.Fatalf("embedded %d texts with the original's encoder and %d with the fresh one's, want 2 and 2", enc.calls, other.calls)
	}
}
