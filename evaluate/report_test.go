package evaluate

import (
	"strings"
	"testing"
)

func TestSideBySide(t *testing.T) {
	row := func(model, ds, variant, metric string, values ...float64) Row {
		return newRow(model, ds, "intent", variant, metric, make([]uint64, len(values)), values, nil)
	}
	a := &Result{Model: "a", Rows: []Row{row("a", "snips", "1-shot", "accuracy", 0.5, 0.7)}, Notes: []string{"note", "Wall time of the suite: 3 s."}}
	b := &Result{Model: "b", Rows: []Row{row("b", "snips", "1-shot", "accuracy", 0.25), row("b", "clinc150", "1-shot", "accuracy", 0.1)}, Notes: []string{"note"}}
	var out strings.Builder
	if err := SideBySide(&out, []*Result{a, b}); err != nil {
		t.Fatal(err)
	}
	want := "### intent\n\n| model | snips 1-shot accuracy | clinc150 1-shot accuracy |\n|---|---|---|\n" +
		"| a | 60.00 ± 10.00 | – |\n| b | 25.00 | 10.00 |\n\n- note\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	// More than maxColumns columns: a table per dataset and variant.
	var wide []Row
	for i := 0; i <= maxColumns; i++ {
		wide = append(wide, row("a", "clinc150", "1-shot", strings.Repeat("m", i+1), 0.5))
	}
	out.Reset()
	if err := SideBySide(&out, []*Result{{Model: "a", Rows: wide}}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "### intent: clinc150 1-shot\n\n| model | m | mm |") {
		t.Errorf("wide table not split:\n%s", out.String())
	}
	if err := SideBySide(&out, nil); err == nil {
		t.Error("no results accepted")
	}
}
