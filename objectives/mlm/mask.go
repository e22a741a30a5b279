package mlm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"convrep/objectives/inputs"
	"convrep/tokenizers"
)

// MaskOptions say how MaskTokens chooses and corrupts tokens.
type MaskOptions struct {
	Prob      float64        // share of the eligible tokens chosen (0.15 in BERT)
	MaskID    int64          // the tokenizer's mask token ([MASK], <mask>)
	VocabSize int64          // random replacements are drawn from [0, VocabSize), special tokens excluded
	Special   map[int64]bool // ids never chosen nor drawn: [CLS], [SEP], [PAD], role tokens, ...
}

// Validate reports a setting MaskTokens cannot work with.
func (o MaskOptions) Validate() error {
	switch {
	case !(o.Prob > 0 && o.Prob <= 1):
		return fmt.Errorf("mask probability %v must be in (0, 1]", o.Prob)
	case o.VocabSize <= 0:
		return fmt.Errorf("vocabulary size %d must be positive", o.VocabSize)
	case o.MaskID < 0 || o.MaskID >= o.VocabSize:
		return fmt.Errorf("mask id %d outside the vocabulary of %d", o.MaskID, o.VocabSize)
	case int64(len(o.Special)) >= o.VocabSize:
		return fmt.Errorf("every token of the vocabulary of %d is special: no random replacement", o.VocabSize)
	}
	return nil
}

// MaskTokens masks each row of ids (row i holds lengths[i] real tokens followed by padding) with MaskRow,
// drawing from g row after row. It returns new slices; ids is left as it is.
func MaskTokens(ids [][]int64, lengths []int, opt MaskOptions, g *rand.Rand) (masked, labels [][]int64) {
	masked, labels = make([][]int64, len(ids)), make([][]int64, len(ids))
	for i, row := range ids {
		n := len(row)
		if i < len(lengths) {
			n = lengths[i]
		}
		masked[i], labels[i] = MaskRow(row, n, opt, g)
	}
	return masked, labels
}

// MaskRow chooses k = max(1, round(Prob·n)) of the n eligible tokens of row (the real tokens, the first
// length ones, that are not special), as BERT's create_pretraining_data does, so that every row with an
// eligible token has a label and a batch never has an empty loss. A chosen token becomes MaskID with
// probability 0.8, a random non-special token with 0.1, and stays with 0.1 (BERT §3.1). labels holds the
// original token at the chosen positions and IgnoreLabel elsewhere.
func MaskRow(row []int64, length int, opt MaskOptions, g *rand.Rand) (masked, labels []int64) {
	masked = append([]int64(nil), row...)
	labels = make([]int64, len(row))
	for j := range labels {
		labels[j] = inputs.IgnoreLabel
	}
	length = min(max(length, 0), len(row))
	var eligible []int
	for j := 0; j < length; j++ {
		if !opt.Special[row[j]] {
			eligible = append(eligible, j)
		}
	}
	if len(eligible) == 0 {
		return masked, labels
	}
	k := max(1, int(math.Round(opt.Prob*float64(len(eligible)))))
	k = min(k, len(eligible))
	// A partial Fisher-Yates shuffle: the first k entries are a uniform sample without replacement.
	for c := 0; c < k; c++ {
		s := c + g.IntN(len(eligible)-c)
		eligible[c], eligible[s] = eligible[s], eligible[c]
		j := eligible[c]
		labels[j] = row[j]
		switch r := g.Float64(); {
		case r < 0.8:
			masked[j] = opt.MaskID
		case r < 0.9:
			masked[j] = randomToken(opt, g)
		}
	}
	return masked, labels
}

// randomToken draws a non-special id uniformly (rejection sampling; Validate ensures one exists, and the
// bound on tries keeps a wrong Special map from looping forever).
func randomToken(opt MaskOptions, g *rand.Rand) int64 {
	var id int64
	for try := 0; try < 1000; try++ {
		if id = g.Int64N(opt.VocabSize); !opt.Special[id] {
			return id
		}
	}
	return id
}

// ExampleRand is the random source that masks one example: it depends only on the experiment's seed, the
// epoch and the example's index, so a resumed run masks every example exactly as the first run would have,
// without saving any random state, and an example is masked differently in each epoch (dynamic masking).
func ExampleRand(seed int64, epoch, example int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^0x6d6c6d5f6d61736b, uint64(epoch)<<32^uint64(example)))
}

// MaskOptionsFor are BERT's masking choices for the tokenizer: the share p of chosen tokens, the mask token, and
// every special token of the tokenizer (and the pad), which is never chosen.
func MaskOptionsFor(tok *tokenizers.Tokenizer, p float64) (MaskOptions, error) {
	opt := MaskOptions{Prob: p, MaskID: tok.MaskID(), VocabSize: int64(tok.VocabSize()), Special: map[int64]bool{}}
	for id := int64(0); id < opt.VocabSize; id++ {
		if tok.IsSpecial(id) {
			opt.Special[id] = true
		}
	}
	if pad := tok.PadID(); pad >= 0 {
		opt.Special[pad] = true
	}
	if err := opt.Validate(); err != nil {
		return opt, fmt.Errorf("masking with this tokenizer: %w", err)
	}
	return opt, nil
}
