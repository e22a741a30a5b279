package objectives

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"convrep/datasets"
	"convrep/internal/shared"
)

func someDialogues(n int) []datasets.Dialogue {
	var ds []datasets.Dialogue
	for i := range n {
		ds = append(ds, datasets.Dialogue{ID: fmt.Sprint(i), Corpus: []string{"woz2", "kvret"}[i%2]})
	}
	return ds
}

// The held-out share is round(share·n) dialogues, the same for the same seed whatever the order the
// dialogues come in, another for another seed.
func TestHeldOutSeededAndOrderFree(t *testing.T) {
	ds := someDialogues(1000)
	a, err := HeldOut(ds, 0.01, 42)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 10 {
		t.Fatalf("%d held out of 1000 at 0.01, want 10", len(a))
	}
	shuffled := slices.Clone(ds)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b, _ := HeldOut(shuffled, 0.01, 42)
	c, _ := HeldOut(ds, 0.01, 43)
	if !sameKeys(a, b) {
		t.Errorf("the same seed held out %v, then %v for the dialogues in another order", a, b)
	}
	if sameKeys(a, c) {
		t.Errorf("seeds 42 and 43 held out the same dialogues %v", a)
	}
	for _, bad := range []float64{0, 1, 0.9999, math.NaN()} {
		if _, err := HeldOut(ds, bad, 42); err == nil || !strings.Contains(err.Error(), "valid_share") {
			t.Errorf("share %v: %v, want an error naming train.valid_share", bad, err)
		}
	}
	// IDs repeat across corpora: a dialogue is its corpus and its ID.
	dup := []datasets.Dialogue{{ID: "1", Corpus: "a"}, {ID: "1", Corpus: "b"}, {ID: "2", Corpus: "a"}}
	if h, _ := HeldOut(dup, 0.34, 1); len(h) != 1 {
		t.Errorf("held out %v of three distinct dialogues at 0.34, want one", h)
	}
}

func sameKeys(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// Read through a Holdout, the two sides of a corpus are disjoint, make up the whole, and the validation
// side is the held-out share, which Seen reports.
func TestReadDialoguesThroughHoldout(t *testing.T) {
	root := shared.MustPath(t, "data", "pretrain")
	env := DataEnv{Root: root, Corpora: []string{"woz2"}}
	all, err := env.ReadDialogues()
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	train, valid := env, env
	train.Holdout = &Holdout{Share: 0.05, Seed: 7}
	valid.Holdout = &Holdout{Share: 0.05, Seed: 7, Valid: true, Seen: func(k []string) { seen = k }}
	tr, err := train.ReadDialogues()
	if err != nil {
		t.Fatal(err)
	}
	va, err := valid.ReadDialogues()
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, d := range tr {
		in[DialogueKey(d)] = true
	}
	var vk []string
	for _, d := range va {
		if in[DialogueKey(d)] {
			t.Fatalf("dialogue %s is on both sides", DialogueKey(d))
		}
		vk = append(vk, DialogueKey(d))
	}
	slices.Sort(vk)
	if len(tr)+len(va) != len(all) || !slices.Equal(vk, seen) {
		t.Fatalf("%d training + %d held-out dialogues of %d; Seen reported %d", len(tr), len(va), len(all), len(seen))
	}
	if want := int(math.Round(0.05 * float64(len(all)))); len(va) != want {
		t.Errorf("%d held out, want %d", len(va), want)
	}
}
