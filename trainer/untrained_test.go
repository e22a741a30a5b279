package trainer

import (
	"context"
	"testing"

	"github.com/sugarme/gotch"
	"go.uber.org/zap/zaptest"
)

// The untrained baseline the evaluation suite compares with is exactly the backbone training starts from.
func TestUntrainedIsTheStartingPoint(t *testing.T) {
	dir := t.TempDir()
	e, err := LoadExperiment(tinyExperiment(t, dir, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	base, _, err := Untrained(context.Background(), e, gotch.CPU, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), e, Options{}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	start := tr.bb.model.Params()
	if len(start) == 0 || len(start) != len(base.Params()) {
		t.Fatalf("%d parameters at the start of training, %d in the untrained backbone", len(start), len(base.Params()))
	}
	for name, p := range base.Params() {
		q, ok := start[name]
		if !ok {
			t.Fatalf("training has no parameter %s", name)
		}
		if !p.MustEqual(q, false) {
			t.Errorf("parameter %s differs between the untrained backbone and the start of training", name)
		}
	}
}
