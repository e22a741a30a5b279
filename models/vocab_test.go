package models

import (
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/shared"
)

// Growing the vocabulary at load keeps the checkpoint's rows (outputs for the old ids are unchanged) and
// adds rows for the new ids, in the embeddings and the MLM head's bias; a smaller size is ignored.
func TestLoadGrowsVocabulary(t *testing.T) {
	dir := shared.MustPath(t, "fixtures", "tiny-bert")
	base, err := Load(dir, LoadOptions{Heads: &Heads{MLM: true}, Device: gotch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	v := base.Config.VocabSize
	grown, err := Load(dir, LoadOptions{Heads: &Heads{MLM: true}, VocabSize: v + 2, Device: gotch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	if grown.Config.VocabSize != v+2 {
		t.Fatalf("vocabulary %d, want %d", grown.Config.VocabSize, v+2)
	}
	for name, rows := range map[string]int64{"bert.embeddings.word_embeddings.weight": v + 2, "cls.predictions.bias": v + 2} {
		p, err := grown.VS.Root().Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.MustSize()[0]; got != rows {
			t.Errorf("%s has %d rows, want %d", name, got, rows)
		}
		q, _ := base.VS.Root().Get(name)
		if !p.MustNarrow(0, 0, v, false).MustEqual(q, false) {
			t.Errorf("%s: the checkpoint's rows changed", name)
		}
	}
	ids := ts.MustOfSlice([]int64{2, 7, 9, v - 1, 3}).MustView([]int64{1, 5}, true)
	mask := ts.MustOnes([]int64{1, 5}, gotch.Int64, gotch.CPU)
	a, _ := base.Forward(Input{IDs: ids, Mask: mask}, false)
	b, err := grown.Forward(Input{IDs: ids, Mask: mask}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Last.MustEqual(b.Last, false) {
		t.Error("outputs for the checkpoint's ids changed")
	}
	newIDs := ts.MustOfSlice([]int64{2, v, v + 1, 3}).MustView([]int64{1, 4}, true)
	if _, err := grown.Forward(Input{IDs: newIDs, Mask: ts.MustOnes([]int64{1, 4}, gotch.Int64, gotch.CPU)}, false); err != nil {
		t.Errorf("the new ids: %v", err)
	}
	same, err := Load(dir, LoadOptions{VocabSize: v - 5, Device: gotch.CPU})
	if err != nil || same.Config.VocabSize != v {
		t.Errorf("a smaller size: vocabulary %d, %v", same.Config.VocabSize, err)
	}
}
