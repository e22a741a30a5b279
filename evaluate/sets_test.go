package evaluate_test

// The sampling on the evaluation sets themselves, read by package sets (which imports this package, hence an
// external test).

import (
	"fmt"
	"reflect"
	"testing"

	"convrep/evaluate"
	"convrep/evaluate/sets"
	"convrep/internal/shared"
)

func TestSampleSupportDeterministic(t *testing.T) {
	train, err := sets.ReadSNIPS(shared.MustPath(t, "data", "eval", "snips", "snips_train.json"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for seed := uint64(0); seed < 10; seed++ {
		a, err := evaluate.SampleSupport(train, 5, seed)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := evaluate.SampleSupport(train, 5, seed)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two draws differ", seed)
		}
		if len(a) != 7 {
			t.Fatalf("seed %d: %d labels, want 7", seed, len(a))
		}
		for _, s := range a {
			if len(s.Rows) != 5 {
				t.Errorf("seed %d label %s: %d rows, want 5", seed, s.Label, len(s.Rows))
			}
		}
		seen[fmt.Sprint(a)] = true
	}
	if len(seen) != 10 {
		t.Errorf("10 seeds gave %d distinct support sets", len(seen))
	}
}

func TestSampleCandidatesAmazonQA(t *testing.T) {
	pairs, err := sets.ReadAmazonQA(shared.MustPath(t, "data", "eval", "amazonqa", "qa_Video_Games.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	cands, err := evaluate.SampleCandidates(evaluate.AmazonQASet(pairs, "").Responses, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != len(pairs) {
		t.Fatalf("%d lists for %d pairs", len(cands), len(pairs))
	}
	positions := map[int]bool{}
	for q, c := range cands {
		if len(c.Rows) != 100 || c.Rows[c.Answer] != q {
			t.Fatalf("query %d: %d rows, truth at %d holds %d", q, len(c.Rows), c.Answer, c.Rows[c.Answer])
		}
		positions[c.Answer] = true
	}
	if len(positions) < 90 {
		t.Errorf("the truth took only %d distinct positions out of 100", len(positions))
	}
}

// On the papers' sets every label has at least 2k rows at the papers' shot counts, so the support sets, and
// every figure computed from them, are those of the earlier rule, row for row: CLINC150's in-scope training
// rows (intent, oos "paper"), with its out-of-scope training rows of data_oos_plus.json after them (oos
// "authors", and finetune-intent's 151 classes), and SNIPS.
func TestSupportOfThePapersSetsUnchanged(t *testing.T) {
	full, err := sets.ReadCLINC150(shared.MustPath(t, "data", "eval", "clinc150", "data", "data_full.json"))
	if err != nil {
		t.Fatal(err)
	}
	plus, err := sets.ReadCLINC150(shared.MustPath(t, "data", "eval", "clinc150", "data", "data_oos_plus.json"))
	if err != nil {
		t.Fatal(err)
	}
	snips, err := sets.ReadSNIPS(shared.MustPath(t, "data", "eval", "snips", "snips_train.json"))
	if err != nil {
		t.Fatal(err)
	}
	splits := map[string]evaluate.Split{
		"clinc150":          full.Train,
		"clinc150 oos plus": append(append(evaluate.Split{}, plus.Train...), plus.OOSTrain...),
		"clinc150 151":      append(append(evaluate.Split{}, full.Train...), full.OOSTrain...),
		"snips":             snips,
	}
	for name, train := range splits {
		for _, k := range []int{1, 5, 10} {
			if short := evaluate.Shortfall(train, 2*k); len(short) > 0 {
				t.Fatalf("%s: labels with fewer than 2k=%d rows: %v; the comparison below would not cover the papers' case", name, 2*k, short)
			}
			for seed := uint64(0); seed < 10; seed++ {
				got, err := evaluate.SampleSupport(train, k, seed)
				if err != nil {
					t.Fatal(err)
				}
				if want := evaluate.HalfOfTwoK(train, k, seed); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s k=%d seed=%d: support sets differ from the earlier rule's", name, k, seed)
				}
			}
		}
	}
}
