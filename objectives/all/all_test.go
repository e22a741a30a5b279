package all

import (
	"testing"

	"convrep/objectives"
)

// Every objective cites its paper where it registers, which the model card of a model it trained names.
func TestEveryObjectiveCitesItsPaper(t *testing.T) {
	names := objectives.Names()
	if len(names) < 7 {
		t.Fatalf("%d objectives registered: %v", len(names), names)
	}
	for _, n := range names {
		p, ok := objectives.PaperOf(n)
		if !ok || p.Venue == "" {
			t.Errorf("objective %s registered no paper (%+v)", n, p)
		}
	}
}
