package finetune

import (
	"fmt"
	"testing"

	"convrep/evaluate/sets"
)

func TestBagOfWordsTargets(t *testing.T) {
	var ex []sets.ActExample
	for i := 0; i < BOWMinCount; i++ {
		ex = append(ex, sets.ActExample{History: []string{"hello", "I need a Hotel, please!", "which area?"}, Labels: []string{"request"}})
	}
	ex = append(ex, sets.ActExample{History: []string{"a cheap hotel", "ok"}})
	vocab := BOWVocabulary(ex)
	if fmt.Sprint(vocab) != "[a hotel i need please]" {
		t.Fatalf("vocabulary %v", vocab)
	}
	got := BOWExamples(ex[len(ex)-2:], vocab, Format{Sep: "|"})
	// The context is every turn before the system response; the targets are the words of its last turn.
	if got[0].Text != "hello | I need a Hotel, please!" || fmt.Sprint(got[0].Labels) != "[2 3 0 1 4]" {
		t.Errorf("example 0: %+v", got[0])
	}
	if got[1].Text != "a cheap hotel" || fmt.Sprint(got[1].Labels) != "[0 1]" { // "cheap" is too rare
		t.Errorf("example 1: %+v", got[1])
	}
}

func TestIntentMetricsWithAnOOSClass(t *testing.T) {
	// classes 0 and 1 in scope, 2 out of scope.
	gold := []Example{{Labels: []int{0}}, {Labels: []int{1}}, {Labels: []int{2}}, {Labels: []int{2}}}
	pred := []int{0, 2, 2, 1}
	got, err := IntentMetrics(pred, gold, 2)
	if err != nil {
		t.Fatal(err)
	}
	// all: q0 and q2 right = 2/4; in: q0 of q0,q1 = 1/2; out (in/out decision): q0 in/in, q1 in/out wrong,
	// q2 out/out, q3 out/in wrong = 2/4; recall(out): q2 of q2,q3 = 1/2.
	want := map[string]float64{"acc_all": 0.5, "acc_in": 0.5, "acc_out": 0.5, "recall_out": 0.5}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	got, err = IntentMetrics([]int{0, 1}, gold[:2], -1)
	if err != nil || got["accuracy"] != 1 {
		t.Errorf("without oos: %v %v", got, err)
	}
}
