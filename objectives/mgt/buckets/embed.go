package buckets

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
)

// EmbedTokens runs the frozen encoder m over token rows (each already with its special tokens) and pools
// each into one vector: the result is len(rows)×hidden float32 values in the rows' order. Rows go through
// in batches of `batch`, sorted by length so that a batch pads little; no autograd, no dropout. done, if
// not nil, hears the number of rows embedded so far after each batch.
func EmbedTokens(m *models.Model, rows [][]int32, pad int64, pooling models.Pooling, batch int, done func(int)) ([]float32, error) {
	if batch < 1 {
		return nil, fmt.Errorf("buckets: embed: batch %d", batch)
	}
	dim := int(m.Config.HiddenSize)
	out := make([]float32, len(rows)*dim)
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(rows[a]), len(rows[b])) })
	dev := m.VS.Device()
	for start := 0; start < len(order); start += batch {
		part := order[start:min(start+batch, len(order))]
		vecs, err := embedBatch(m, rows, part, pad, pooling, dev)
		if err != nil {
			return nil, fmt.Errorf("buckets: embed rows %d..%d of %d (by length): %w", start, start+len(part), len(rows), err)
		}
		for k, i := range part {
			copy(out[i*dim:(i+1)*dim], vecs[k*dim:(k+1)*dim])
		}
		if done != nil {
			done(start + len(part))
		}
	}
	return out, nil
}

func embedBatch(m *models.Model, rows [][]int32, part []int, pad int64, pooling models.Pooling, dev gotch.Device) ([]float32, error) {
	width := 1
	for _, i := range part {
		width = max(width, len(rows[i]))
	}
	ids, mask := make([]int64, len(part)*width), make([]int64, len(part)*width)
	for k, i := range part {
		for j := 0; j < width; j++ {
			if j < len(rows[i]) {
				ids[k*width+j], mask[k*width+j] = int64(rows[i][j]), 1
			} else {
				ids[k*width+j] = pad
			}
		}
	}
	var vals []float32
	err := torch.NoGrad(func() error {
		return torch.Catch("embed batch", func() error {
			shape := []int64{int64(len(part)), int64(width)}
			in := models.Input{IDs: ts.MustOfSlice(ids).MustView(shape, true), Mask: ts.MustOfSlice(mask).MustView(shape, true)}
			if dev != gotch.CPU {
				in.IDs, in.Mask = in.IDs.MustTo(dev, true), in.Mask.MustTo(dev, true)
			}
			defer in.Drop()
			out, err := m.Forward(in, false)
			if err != nil {
				return err
			}
			defer out.Drop()
			p, err := models.Pool(pooling, out.Last, in.Mask)
			if err != nil {
				return err
			}
			cpu := p.MustTo(gotch.CPU, true).MustTotype(gotch.Float, true).MustContiguous(true)
			defer cpu.MustDrop()
			vals = make([]float32, cpu.Numel())
			cpu.MustCopyData(vals, uint(len(vals)))
			return nil
		})
	})
	return vals, err
}

// ModelKey digests a frozen encoder: its configuration and every parameter's bytes, in name order, so a
// cache of its embeddings is tied to these exact weights (a pretrained folder, or a seeded random model).
func ModelKey(m *models.Model) (Key, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s %d %d %d %d\n", m.Config.Arch, m.Config.VocabSize, m.Config.HiddenSize, m.Config.NumLayers, m.Config.MaxPositions)
	params := m.Params()
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st, err := torch.ToSafetensor(n, params[n])
		if err != nil {
			return Key{}, fmt.Errorf("buckets: model key: %w", err)
		}
		fmt.Fprintf(h, "%s %s %v %d\n", n, st.DType, st.Shape, len(st.Data))
		h.Write(st.Data)
	}
	var k Key
	copy(k[:], h.Sum(nil))
	return k, nil
}

// DataKey digests what an array was computed from: a label, parts (settings, digests) and token rows.
func DataKey(label string, parts []string, rows [][]int32) Key {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n", label, len(parts))
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	var b [4]byte
	for _, r := range rows {
		binary.LittleEndian.PutUint32(b[:], uint32(len(r)))
		h.Write(b[:])
		for _, v := range r {
			binary.LittleEndian.PutUint32(b[:], uint32(v))
			h.Write(b[:])
		}
	}
	var k Key
	copy(k[:], h.Sum(nil))
	return k
}
