package objectives

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"convrep/datasets"
)

// Holdout keeps a share of the pretraining dialogues apart for validation. The split is by dialogue, so no
// utterance of a held-out dialogue reaches a training example, whatever pairs or windows an objective builds
// from it; it depends only on the seed and the set of dialogues read (not on their order), so the same
// seed holds out the same dialogues. A DataEnv with a Holdout reads through it (ReadDialogues, EachDialogue):
// the training side gets the rest, the validation side the held-out share.
//
// The corpora's split (HeldOut) holds out exactly round(share·n) of the n dialogues, which it must see all
// at once to choose. Dialogues that stream in (the user's own files alone, DataEnv.Streams) are split one
// at a time instead (HeldOutStreamed): each is held out when a hash of the seed and its key falls below the
// share, so about share·n are, with the binomial spread of that count.
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

// HeldOutStreamed reports whether the streamed split holds out the dialogue of key (DialogueKey): whether the
// first 53 bits of SHA-256(seed, key), read as a fraction of one, fall below share. It depends on nothing
// else, so each dialogue is decided as it is read, the same on every machine.
func HeldOutStreamed(key string, share float64, seed int64) bool {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h := sha256.New()
	h.Write([]byte("convrep holdout\x00"))
	h.Write(b[:])
	h.Write([]byte(key))
	x := binary.BigEndian.Uint64(h.Sum(nil)) >> 11
	return float64(x)*0x1p-53 < share
}

// streamedRule names the streamed split and this side of it in a cache key.
func (h *Holdout) streamedRule() string {
	side := "train"
	if h.Valid {
		side = "valid"
	}
	return fmt.Sprintf("streamed sha256 share=%g seed=%d side=%s", h.Share, h.Seed, side)
}

// stream hands fn the dialogues of h's side of what each reads, deciding each as it comes (HeldOutStreamed).
// After the last, a split that held out none or all is an error, and Seen hears the held-out keys.
func (h *Holdout) stream(each func(func(datasets.Dialogue) error) error, fn func(datasets.Dialogue) error) error {
	if !(h.Share > 0 && h.Share < 1) {
		return fmt.Errorf("train.valid_share %g: must be between 0 and 1", h.Share)
	}
	var keys []string // the held-out keys, kept only for Seen
	n, held := 0, 0
	err := each(func(d datasets.Dialogue) error {
		n++
		key := DialogueKey(d)
		out := HeldOutStreamed(key, h.Share, h.Seed)
		if out {
			held++
			if h.Seen != nil {
				keys = append(keys, key)
			}
		}
		if out == h.Valid {
			return fn(d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if held == 0 || held == n {
		return fmt.Errorf("train.valid_share %g of %d dialogues held out %d: none left to validate on or none to train on", h.Share, n, held)
	}
	if h.Seen != nil {
		sort.Strings(keys)
		h.Seen(keys)
	}
	return nil
}
