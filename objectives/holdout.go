package objectives

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"convrep/datasets"
)

// Holdout keeps a share of the pretraining dialogues apart for validation. The split is by dialogue, so no
// utterance of a held-out dialogue reaches a training example, whatever pairs or windows an objective builds
// from it; it depends only on the seed and the set of dialogues read (not on their order), so the same
// seed holds out the same dialogues. A DataEnv with a Holdout reads through it (ReadDialogues): the training
// side gets the rest, the validation side the held-out share.
type Holdout struct {
	Share float64 // in (0, 1): the share held out, at least one dialogue
	Seed  int64
	Valid bool // this side reads the held-out dialogues; otherwise the rest

	// Seen, when set, receives the held-out dialogues' keys (DialogueKey), sorted, each time the split runs.
	Seen func(keys []string)
}

// DialogueKey names a dialogue across corpora: IDs are unique within a corpus only.
func DialogueKey(d datasets.Dialogue) string { return d.Corpus + "/" + d.ID }

// HeldOut is the set of keys the split holds out of ds: round(share·n) of the n distinct keys, at least one,
// never all; the keys are sorted and then shuffled by a generator of its own seeded by seed.
func HeldOut(ds []datasets.Dialogue, share float64, seed int64) (map[string]bool, error) {
	seen := map[string]bool{}
	var keys []string
	for _, d := range ds {
		if k := DialogueKey(d); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	n := len(keys)
	k := max(1, int(math.Round(share*float64(n))))
	if !(share > 0 && share < 1) || k >= n {
		return nil, fmt.Errorf("train.valid_share %g of %d dialogues leaves no dialogue to train or none to validate on", share, n)
	}
	sort.Strings(keys)
	// A stream of its own (PCG keyed by the seed and a constant naming the purpose), so the split draws
	// nothing from any generator training uses.
	r := rand.New(rand.NewPCG(uint64(seed), 0x76616c6964)) // "valid"
	r.Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	out := make(map[string]bool, k)
	for _, key := range keys[:k] {
		out[key] = true
	}
	return out, nil
}

// apply keeps the dialogues of ds on h's side, in their order.
func (h *Holdout) apply(ds []datasets.Dialogue) ([]datasets.Dialogue, error) {
	held, err := HeldOut(ds, h.Share, h.Seed)
	if err != nil {
		return nil, err
	}
	var kept []datasets.Dialogue
	for _, d := range ds {
		if held[DialogueKey(d)] == h.Valid {
			kept = append(kept, d)
		}
	}
	if h.Seen != nil {
		keys := make([]string, 0, len(held))
		for k := range held {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		h.Seen(keys)
	}
	return kept, nil
}
