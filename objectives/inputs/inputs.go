// Package inputs turns an objective's token rows into the tensors a model reads: padded ids with their attention
// masks, and the label positions a masked-LM loss gathers.
package inputs

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/tokenizers"
)

// Padded right-pads token ids to the longest row, with a 1/0 attention mask and zero token types.
func Padded[T int32 | int64](rows [][]T, pad int64) *tokenizers.Batch { return PaddedTo(rows, pad, 0) }

// PaddedTo is Padded to at least width tokens (fixed shapes, DataEnv.FixedShapes).
func PaddedTo[T int32 | int64](rows [][]T, pad int64, width int) *tokenizers.Batch {
	for _, r := range rows {
		width = max(width, len(r))
	}
	b := &tokenizers.Batch{}
	for _, r := range rows {
		ids, mask := make([]int64, width), make([]int64, width)
		for j := range ids {
			if j < len(r) {
				ids[j], mask[j] = int64(r[j]), 1
			} else {
				ids[j] = pad
			}
		}
		b.InputIDs = append(b.InputIDs, ids)
		b.AttentionMask = append(b.AttentionMask, mask)
		b.TokenTypeIDs = append(b.TokenTypeIDs, make([]int64, width))
		b.Lengths = append(b.Lengths, len(r))
	}
	return b
}

// IgnoreLabel marks a position whose token was not chosen: no loss there (PyTorch's ignore_index).
const IgnoreLabel = -100

// paddedRows right-pads rows to the longest with fill, and gives the 1/0 mask of the real tokens.
func paddedRows(rows [][]int64, fill int64) (ids, mask [][]int64) {
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	for _, r := range rows {
		id, m := make([]int64, width), make([]int64, width)
		for j := range id {
			id[j] = fill
			if j < len(r) {
				id[j], m[j] = r[j], 1
			}
		}
		ids, mask = append(ids, id), append(mask, m)
	}
	return ids, mask
}

// InputOf builds a model input (zero token types) from unpadded rows.
func InputOf(rows [][]int64, pad int64, dev gotch.Device) (models.Input, error) {
	ids, mask := paddedRows(rows, pad)
	b := &tokenizers.Batch{InputIDs: ids, AttentionMask: mask}
	for _, r := range ids {
		b.TokenTypeIDs = append(b.TokenTypeIDs, make([]int64, len(r)))
	}
	return models.BatchInput(b, dev)
}

// Labels are the masked-LM targets of a [Rows,Width] batch, kept as the positions that were chosen. The
// batch's builder knows them in Go, so the loss gathers the chosen hidden states without a nonzero on the
// device, which would read the count back to the host and wait for the device every step.
type Labels struct {
	Pos    *ts.Tensor // int64 [N]: the flat positions r·Width+c of the chosen tokens, row by row
	Target *ts.Tensor // int64 [N]: the original token at each
	// Rows and Width are the shape of the batch the positions index, N the number of chosen tokens.
	Rows, Width, N int64
}

// LabelsOf reads label rows (the original token where one was chosen, IgnoreLabel elsewhere; a row
// shorter than the longest is padded with IgnoreLabel) into Labels on dev.
func LabelsOf(rows [][]int64, dev gotch.Device) (Labels, error) {
	l := Labels{Rows: int64(len(rows))}
	var pos, target []int64
	for _, r := range rows {
		l.Width = max(l.Width, int64(len(r)))
	}
	for i, r := range rows {
		for j, v := range r {
			if v != IgnoreLabel {
				pos, target = append(pos, int64(i)*l.Width+int64(j)), append(target, v)
			}
		}
	}
	l.N = int64(len(pos))
	err := torch.Catch("labels to tensors", func() error {
		l.Pos, l.Target = indexTensor(pos, dev), indexTensor(target, dev)
		return nil
	})
	if err != nil {
		l.Drop()
		return Labels{}, err
	}
	return l, nil
}

// indexTensor is v as an int64 tensor on dev ([0] when v is empty). It panics on a libtorch error.
func indexTensor(v []int64, dev gotch.Device) *ts.Tensor {
	if len(v) == 0 {
		return ts.MustZeros([]int64{0}, gotch.Int64, dev)
	}
	return models.ToDevice(ts.MustOfSlice(v), dev)
}

// Defined reports whether l holds labels (the zero Labels does not).
func (l Labels) Defined() bool { return l.Pos != nil && l.Target != nil }

// Drop frees the label tensors.
func (l Labels) Drop() { torch.Drop(l.Pos, l.Target) }
