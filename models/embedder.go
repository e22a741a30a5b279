package models

import (
	"fmt"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/tokenizers"
)

// BatchInput turns a tokenised batch into the model's input tensors on dev.
func BatchInput(b *tokenizers.Batch, dev gotch.Device) (Input, error) {
	in := Input{Unpadded: allOnes(b.AttentionMask)}
	err := torch.Catch("batch to tensors", func() error {
		in.IDs = matrix(b.InputIDs, dev)
		in.Mask = matrix(b.AttentionMask, dev)
		in.TypeIDs = matrix(b.TokenTypeIDs, dev)
		return nil
	})
	return in, err
}

// allOnes says whether every entry of the rows is 1: a batch without padding.
func allOnes(rows [][]int64) bool {
	for _, r := range rows {
		for _, v := range r {
			if v != 1 {
				return false
			}
		}
	}
	return true
}

// Drop frees the input's tensors.
func (in Input) Drop() { torch.Drop(in.IDs, in.Mask, in.TypeIDs) }

func matrix(rows [][]int64, dev gotch.Device) *ts.Tensor {
	if len(rows) == 0 {
		return nil
	}
	flat := make([]int64, 0, len(rows)*len(rows[0]))
	for _, r := range rows {
		flat = append(flat, r...)
	}
	return ToDevice(ts.MustOfSlice(flat).MustView([]int64{int64(len(rows)), int64(len(rows[0]))}, true), dev)
}

// Embedder turns texts into one vector each: tokenise, encode, pool.
type Embedder struct {
	Model      *Model
	Tokenizer  *tokenizers.Tokenizer
	Pooling    Pooling
	MaxLength  int
	Truncation tokenizers.Truncation
}

// Embed returns the embeddings of texts, in order, as float32 rows. It runs without autograd and dropout.
func (e *Embedder) Embed(texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	batch, err := e.Tokenizer.EncodeBatch(texts, tokenizers.BatchOptions{MaxLength: e.maxLength(), Truncation: e.Truncation})
	if err != nil {
		return nil, err
	}
	in, err := BatchInput(batch, e.Model.VS.Device())
	if err != nil {
		return nil, err
	}
	defer in.Drop()
	var rows [][]float32
	err = torch.NoGrad(func() error {
		out, err := e.Model.Forward(in, false)
		if err != nil {
			return err
		}
		defer out.Drop()
		pooled, err := Pool(e.Pooling, out.Last, in.Mask)
		if err != nil {
			return err
		}
		defer pooled.MustDrop()
		rows, err = floatRows(pooled)
		return err
	})
	return rows, err
}

func (e *Embedder) maxLength() int {
	limit := int(e.Model.Config.MaxSequence())
	if e.MaxLength <= 0 || e.MaxLength > limit {
		return limit
	}
	return e.MaxLength
}

// floatRows copies a [B,H] tensor to Go.
func floatRows(x *ts.Tensor) ([][]float32, error) {
	var rows [][]float32
	err := torch.Catch("read embeddings", func() error {
		cpu := x.MustTo(gotch.CPU, false).MustTotype(gotch.Float, true).MustContiguous(true)
		defer cpu.MustDrop()
		size := cpu.MustSize()
		flat, ok := cpu.Vals().([]float32)
		if !ok || len(size) != 2 {
			return fmt.Errorf("embeddings have shape %v", size)
		}
		for i := int64(0); i < size[0]; i++ {
			rows = append(rows, flat[i*size[1]:(i+1)*size[1]])
		}
		return nil
	})
	return rows, err
}
