package models

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// embeddings sums word, position and (where the family has them) token-type embeddings, then LayerNorm and
// dropout.
type embeddings struct {
	word, pos *ts.Tensor
	tokType   *ts.Tensor // nil in a family without token types
	norm      layerNorm
	afterPad  bool // positions start after the pad id (Family.positionsAfterPad)
	pad       int64
	drop      float64
}

func newEmbeddings(p *params, c *Config) *embeddings {
	f := c.Family()
	prefix := f.EmbeddingsPrefix()
	e := &embeddings{afterPad: f.positionsAfterPad, pad: c.PadTokenID, drop: c.HiddenDropout}
	e.word = p.embedding(prefix+"word_embeddings", c.VocabSize, c.HiddenSize, c.PadTokenID)
	posPad := int64(-1)
	if f.positionsAfterPad {
		posPad = c.PadTokenID // the position table's pad row is a padding_idx too
	}
	e.pos = p.embedding(prefix+"position_embeddings", c.MaxPositions, c.HiddenSize, posPad)
	if f.sinusoidal && c.SinusoidalPositions {
		table := ts.MustOfSlice(sinusoidal(c.MaxPositions, c.HiddenSize)).MustView([]int64{c.MaxPositions, c.HiddenSize}, true)
		torch.NoGrad(func() error { e.pos.Copy_(table); return nil })
		table.MustDrop()
	}
	if f.tokenTypes {
		e.tokType = p.embedding(prefix+"token_type_embeddings", c.TypeVocabSize, c.HiddenSize, -1)
	}
	e.norm = p.layerNorm(prefix+"LayerNorm", c.HiddenSize, c.LayerNormEps)
	return e
}

// positionIDs are 0..T-1, or, where positions start after the pad id (RoBERTa), real tokens counted from
// pad+1 and padding given the pad id (modeling_roberta.py's create_position_ids_from_input_ids).
func (e *embeddings) positionIDs(ids *ts.Tensor) *ts.Tensor {
	size := ids.MustSize()
	dev := ids.MustDevice()
	if !e.afterPad {
		return ts.MustArange(ts.IntScalar(size[1]), gotch.Int64, dev).MustUnsqueeze(0, true).MustExpand(size, false, true)
	}
	real := ids.MustNe(ts.IntScalar(e.pad), false).MustTotype(gotch.Int64, true)
	count := real.MustCumsum(1, gotch.Int64, false)
	pos := count.MustMul(real, true).MustAddScalar(ts.IntScalar(e.pad), true)
	real.MustDrop()
	return pos
}

// forward is the embeddings of ids [B,T] (typeIDs nil: all type 0), [B,T,H]. fused runs them on convrep's fused
// kernels (torch.EmbedLayerNorm: the lookups, LayerNorm and dropout in one kernel each way), which the caller has
// found loaded on the ids' device.
func (e *embeddings) forward(ids, typeIDs *ts.Tensor, train, fused bool) *ts.Tensor {
	if fused {
		return e.fusedForward(ids, typeIDs, train)
	}
	x := ts.MustEmbedding(e.word, ids, -1, false, false)
	posIDs := e.positionIDs(ids)
	pos := ts.MustEmbedding(e.pos, posIDs, -1, false, false)
	posIDs.MustDrop()
	x = x.MustAdd(pos, true)
	pos.MustDrop()
	if e.tokType != nil {
		if typeIDs == nil {
			typeIDs = ids.MustZerosLike(false)
			defer typeIDs.MustDrop()
		}
		tt := ts.MustEmbedding(e.tokType, typeIDs, -1, false, false)
		x = x.MustAdd(tt, true)
		tt.MustDrop()
	}
	out := e.norm.forward(x)
	x.MustDrop()
	return dropout(out, e.drop, train)
}

func (e *embeddings) fusedForward(ids, typeIDs *ts.Tensor, train bool) *ts.Tensor {
	p := 0.0
	if train {
		p = e.drop
	}
	posIDs := e.positionIDs(ids)
	defer posIDs.MustDrop()
	if e.tokType != nil && typeIDs == nil {
		typeIDs = ids.MustZerosLike(false)
		defer typeIDs.MustDrop()
	}
	return torch.EmbedLayerNorm(e.word, e.pos, e.tokType, ids, posIDs, typeIDs, e.norm.w, e.norm.b, p, e.norm.eps)
}
