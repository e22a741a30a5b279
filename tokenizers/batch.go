package tokenizers

import (
	"errors"
	"fmt"
)

// Truncation says which end of a too-long text loses tokens.
type Truncation int

const (
	// TruncateRight drops tokens from the end (HF's default).
	TruncateRight Truncation = iota
	// TruncateLeft drops tokens from the start: a flattened dialogue
	// history keeps its most recent turns.
	TruncateLeft
)

// BatchOptions control EncodeBatch and friends.
type BatchOptions struct {
	// MaxLength bounds every row, special tokens included; 0 means no
	// truncation (see Tokenizer.ModelMaxLength for the model's limit).
	MaxLength int
	// Truncation picks the side that is cut. Pairs are cut longest-first,
	// one token at a time from the longer text (the second on ties), as HF.
	Truncation Truncation
	// PadToMax pads every row to MaxLength instead of the longest row.
	PadToMax bool
}

// Input is one row of a batch: a text, and a second text when HasPair
// (an empty second text still makes a pair, as in HF).
type Input struct {
	Text    string
	Pair    string
	HasPair bool
}

// Batch is a rectangular, right-padded batch.
type Batch struct {
	InputIDs      [][]int64
	AttentionMask [][]int64 // 1 for real tokens, 0 for padding
	TokenTypeIDs  [][]int64 // segment ids; all 0 for RoBERTa and padding
	Lengths       []int     // real length of each row
}

// EncodeBatch encodes single texts with special tokens, truncates and pads.
func (t *Tokenizer) EncodeBatch(texts []string, opt BatchOptions) (*Batch, error) {
	rows := make([]Input, len(texts))
	for i, s := range texts {
		rows[i] = Input{Text: s}
	}
	return t.EncodeInputs(rows, opt)
}

// EncodePairBatch encodes the pairs (a[i], b[i]).
func (t *Tokenizer) EncodePairBatch(a, b []string, opt BatchOptions) (*Batch, error) {
	if len(a) != len(b) {
		return nil, fmt.Errorf("encode pair batch: %d first texts but %d second texts", len(a), len(b))
	}
	rows := make([]Input, len(a))
	for i := range a {
		rows[i] = Input{Text: a[i], Pair: b[i], HasPair: true}
	}
	return t.EncodeInputs(rows, opt)
}

// EncodeInputs encodes rows that may mix single texts and pairs.
func (t *Tokenizer) EncodeInputs(rows []Input, opt BatchOptions) (*Batch, error) {
	if opt.MaxLength < 0 {
		return nil, fmt.Errorf("encode batch: negative MaxLength %d", opt.MaxLength)
	}
	if opt.PadToMax && opt.MaxLength == 0 {
		return nil, errors.New("encode batch: PadToMax needs a MaxLength")
	}
	bt := &Batch{
		InputIDs:      make([][]int64, len(rows)),
		AttentionMask: make([][]int64, len(rows)),
		TokenTypeIDs:  make([][]int64, len(rows)),
		Lengths:       make([]int, len(rows)),
	}
	width := opt.MaxLength // PadToMax; otherwise the longest row
	if !opt.PadToMax {
		width = 0
	}
	for i, r := range rows {
		ids, types, err := t.encodeRow(r, opt)
		if err != nil {
			return nil, fmt.Errorf("encode batch row %d: %w", i, err)
		}
		bt.InputIDs[i], bt.TokenTypeIDs[i], bt.Lengths[i] = ids, types, len(ids)
		if !opt.PadToMax {
			width = max(width, len(ids))
		}
	}
	for i, n := range bt.Lengths {
		if n < width && t.padID < 0 {
			return nil, fmt.Errorf("encode batch: row %d needs padding but the tokenizer has no pad token", i)
		}
		ids := make([]int64, width)
		types := make([]int64, width)
		mask := make([]int64, width)
		copy(ids, bt.InputIDs[i])
		copy(types, bt.TokenTypeIDs[i])
		for j := range mask {
			if j < n {
				mask[j] = 1
			} else {
				ids[j] = int64(t.padID)
			}
		}
		bt.InputIDs[i], bt.TokenTypeIDs[i], bt.AttentionMask[i] = ids, types, mask
	}
	return bt, nil
}

// encodeRow encodes, truncates and adds the special tokens of one row.
func (t *Tokenizer) encodeRow(r Input, opt BatchOptions) (ids, types []int64, err error) {
	a, err := t.encodeText(r.Text, false)
	if err != nil {
		return nil, nil, err
	}
	var b encoded
	if r.HasPair {
		if b, err = t.encodeText(r.Pair, false); err != nil {
			return nil, nil, err
		}
	}
	ta, tb := a.ids, b.ids
	if opt.MaxLength > 0 {
		room := opt.MaxLength - t.numSpecials(r.HasPair)
		if room < 0 {
			return nil, nil, fmt.Errorf("MaxLength %d leaves no room for the %d special tokens",
				opt.MaxLength, t.numSpecials(r.HasPair))
		}
		ta, tb = truncate(ta, tb, room, opt.Truncation)
	}
	ids, types = t.withSpecials(ta, tb, r.HasPair)
	return ids, types, nil
}

// truncate cuts a (and b) to at most room tokens together. With two texts
// it removes one token at a time from the longer one, from b on ties: HF's
// "longest_first".
func truncate(a, b []int64, room int, side Truncation) ([]int64, []int64) {
	cut := func(s []int64, n int) []int64 {
		if side == TruncateLeft {
			return s[n:]
		}
		return s[:len(s)-n]
	}
	over := len(a) + len(b) - room
	if over <= 0 {
		return a, b
	}
	if len(b) == 0 {
		return cut(a, over), b
	}
	na, nb := 0, 0
	la, lb := len(a), len(b)
	for ; over > 0; over-- {
		if la > lb {
			la--
			na++
		} else {
			lb--
			nb++
		}
	}
	return cut(a, na), cut(b, nb)
}

// EncodeOne encodes one text as EncodeBatch does a row (special tokens added, cut to opt.MaxLength on
// opt.Truncation's side, not padded) and also returns full, its length in tokens before the cut.
func (t *Tokenizer) EncodeOne(text string, opt BatchOptions) (ids, types []int64, full int, err error) {
	if opt.MaxLength < 0 {
		return nil, nil, 0, fmt.Errorf("encode: negative MaxLength %d", opt.MaxLength)
	}
	e, err := t.encodeText(text, false)
	if err != nil {
		return nil, nil, 0, err
	}
	a := e.ids
	full = len(a) + t.numSpecials(false)
	if opt.MaxLength > 0 {
		room := opt.MaxLength - t.numSpecials(false)
		if room < 0 {
			return nil, nil, 0, fmt.Errorf("MaxLength %d leaves no room for the %d special tokens", opt.MaxLength, t.numSpecials(false))
		}
		a, _ = truncate(a, nil, room, opt.Truncation)
	}
	ids, types = t.withSpecials(a, nil, false)
	return ids, types, full, nil
}
