package models

import (
	"context"
	"fmt"
	"math"
	"slices"

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

// Embedder turns texts into one vector each: tokenise, encode, pool. Embed and EmbedAll tokenise and run the
// encoder; a server splits the two: Encode (safe for concurrent use) on any goroutine, EmbedEncoded on the
// one OS thread that runs the model.
type Embedder struct {
	Model      *Model
	Tokenizer  *tokenizers.Tokenizer
	Pooling    Pooling
	MaxLength  int
	Truncation tokenizers.Truncation
	Precision  Precision // "" is FP32
}

// Encoded is one text as the encoder reads it: token ids and token type ids, special tokens included, cut to
// the embedder's maximum length. Full is its length in tokens before the cut.
type Encoded struct {
	IDs, TypeIDs []int64
	Full         int
}

// Encode tokenises one text as Embed does.
func (e *Embedder) Encode(text string) (Encoded, error) {
	ids, types, full, err := e.Tokenizer.EncodeOne(text, tokenizers.BatchOptions{MaxLength: e.maxLength(), Truncation: e.Truncation})
	return Encoded{IDs: ids, TypeIDs: types, Full: full}, err
}

// Embed returns the embeddings of texts, in order, as float32 rows, from one forward pass. It runs without
// autograd and dropout.
func (e *Embedder) Embed(texts []string) ([][]float32, error) {
	rows, err := e.encodeAll(texts)
	if err != nil {
		return nil, err
	}
	return e.EmbedEncoded(rows)
}

// encodeAll tokenises texts, the error naming the text (from 1).
func (e *Embedder) encodeAll(texts []string) ([]Encoded, error) {
	rows := make([]Encoded, len(texts))
	for i, t := range texts {
		r, err := e.Encode(t)
		if err != nil {
			return nil, fmt.Errorf("text %d: %w", i+1, err)
		}
		rows[i] = r
	}
	return rows, nil
}

// EmbedAll embeds texts in batches of at most batchSize, the texts sorted by token count first (as
// sentence-transformers' encode sorts them) so that a batch pads little, and returns the vectors in input
// order. done, when not nil, hears how many texts each batch finished. It stops between batches when ctx ends.
func (e *Embedder) EmbedAll(ctx context.Context, texts []string, batchSize int, done func(n int)) ([][]float32, error) {
	if batchSize < 1 {
		return nil, fmt.Errorf("batch size %d: must be at least 1", batchSize)
	}
	rows, err := e.encodeAll(texts)
	if err != nil {
		return nil, err
	}
	order := ByLength(rows)
	out := make([][]float32, len(texts))
	for start := 0; start < len(order); start += batchSize {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("stopped after %d of %d texts: %w", start, len(texts), err)
		}
		idx := order[start:min(start+batchSize, len(order))]
		batch := make([]Encoded, len(idx))
		for j, i := range idx {
			batch[j] = rows[i]
		}
		vecs, err := e.EmbedEncoded(batch)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i] = vecs[j]
		}
		if done != nil {
			done(len(idx))
		}
	}
	return out, nil
}

// ByLength returns the indices of rows ordered by token count, shortest first, ties in input order.
func ByLength(rows []Encoded) []int {
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(rows[a].IDs) - len(rows[b].IDs) })
	return order
}

// EmbedEncoded runs one forward pass over rows, right-padded to the longest, and returns their pooled
// vectors in order. It runs without autograd and dropout on the calling OS thread, under libtorch's bf16
// autocast with Precision BF16; on the CPU, by oneDNN's linears on weights laid out for it at the first call
// (Model.PackForCPUInference), in bfloat16 under autocast.
func (e *Embedder) EmbedEncoded(rows []Encoded) ([][]float32, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	b, err := e.pad(rows)
	if err != nil {
		return nil, err
	}
	in, err := BatchInput(b, e.Model.VS.Device())
	if err != nil {
		return nil, err
	}
	defer in.Drop()
	dev := e.Model.VS.Device()
	if bf16 := e.Precision == BF16; !dev.IsCuda() && torch.HasMKLDNN() && (!bf16 || torch.MKLDNNDirect()) {
		if err := e.Model.PackForCPUInference(bf16); err != nil {
			return nil, err
		}
	}
	var out [][]float32
	forward := func() error {
		states, err := e.Model.Forward(in, false)
		if err != nil {
			return err
		}
		defer states.Drop()
		pooled, err := Pool(e.Pooling, states.Last, in.Mask)
		if err != nil {
			return err
		}
		defer pooled.MustDrop()
		out, err = floatRows(pooled)
		return err
	}
	err = torch.NoGrad(func() error {
		if e.Precision == BF16 {
			return torch.WithAutocast(dev, gotch.BFloat16, forward)
		}
		return forward()
	})
	return out, err
}

// pad makes the rectangular batch of rows, right-padded with the tokenizer's pad id.
func (e *Embedder) pad(rows []Encoded) (*tokenizers.Batch, error) {
	width := 0
	for _, r := range rows {
		width = max(width, len(r.IDs))
	}
	b := &tokenizers.Batch{
		InputIDs:      make([][]int64, len(rows)),
		AttentionMask: make([][]int64, len(rows)),
		TokenTypeIDs:  make([][]int64, len(rows)),
		Lengths:       make([]int, len(rows)),
	}
	pad := e.Tokenizer.PadID()
	for i, r := range rows {
		if len(r.IDs) < width && pad < 0 {
			return nil, fmt.Errorf("row %d needs padding but the tokenizer has no pad token", i+1)
		}
		ids, types, mask := make([]int64, width), make([]int64, width), make([]int64, width)
		copy(ids, r.IDs)
		copy(types, r.TypeIDs)
		for j := range mask {
			if j < len(r.IDs) {
				mask[j] = 1
			} else {
				ids[j] = pad
			}
		}
		b.InputIDs[i], b.TokenTypeIDs[i], b.AttentionMask[i], b.Lengths[i] = ids, types, mask, len(r.IDs)
	}
	return b, nil
}

// Unit scales v to length 1 in place (a zero vector stays zero), as sentence-transformers' Normalize does.
func Unit(v []float32) {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n = math.Sqrt(n); n > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / n)
		}
	}
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
