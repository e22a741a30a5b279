package suite

import (
	"reflect"
	"testing"

	"convrep/evaluate"
	"convrep/tensorboard"
)

// The suite's rows go into its folder's event file at the model's step: a suite at another step adds to the
// file, one at the same step replaces that step's scalars.
func TestSuiteEvents(t *testing.T) {
	dir := t.TempDir()
	rows := func(acc float64) []evaluate.Row {
		return []evaluate.Row{
			{Task: "intent", Dataset: "clinc150", Variant: "1-shot", Metric: "accuracy", Mean: acc},
			{Task: "response-selection", Dataset: "ubuntu", Variant: "100 candidates", Metric: "R100@1", Mean: 0.25},
			{Task: "oos", Dataset: "clinc150", Variant: "5-shot/threshold=mean", Metric: "in-scope accuracy", Mean: 0.5},
		}
	}
	var path string
	for _, run := range []struct {
		step int64
		acc  float64
	}{{200, 0.4}, {100, 0.1}, {200, 0.6}} {
		p, err := writeSuiteEvents(dir, run.step, rows(run.acc))
		if err != nil {
			t.Fatal(err)
		}
		if path != "" && p != path {
			t.Errorf("a second event file %s beside %s", p, path)
		}
		path = p
	}
	events, err := tensorboard.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || events[0].FileVersion != tensorboard.FileVersion || events[1].Step != 100 || events[2].Step != 200 {
		t.Fatalf("events %+v; want the file version, then steps 100 and 200", events)
	}
	want := []tensorboard.Scalar{
		{Tag: "eval/intent/clinc150/1-shot/accuracy", Value: 0.6},
		{Tag: "eval/response-selection/ubuntu/100_candidates/R100@1", Value: 0.25},
		{Tag: "eval/oos/clinc150/5-shot_threshold=mean/in-scope_accuracy", Value: 0.5},
	}
	if !reflect.DeepEqual(events[2].Scalars, want) {
		t.Errorf("step 200: %+v\nwant %+v", events[2].Scalars, want)
	}
	if events[1].Scalars[0].Value != float32(0.1) {
		t.Errorf("step 100: %+v", events[1].Scalars)
	}
}
