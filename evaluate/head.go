package evaluate

import (
	"fmt"

	"convrep/checkpoint"
	"convrep/safetensors"
)

// Head passes an encoder's pooled embeddings through a contrastive head: Linear(d,d) → ReLU → Linear(d,out),
// both without bias, as DSE builds its head (objectives/dse/head.go; DSE §3.1's g(·)). Evaluating through
// it shows the space the contrastive loss compares, beside the mean-pooled encoder the papers evaluate.
type Head struct {
	Enc    Encoder
	W1, W2 []float32 // [d·d] and [out·d], row-major, torch.nn.Linear's layout (out × in)
	D, Out int
}

// ReadHead reads the head a trainer checkpoint holds under name (DSE's is "contrast_head": its tensors are
// param/contrast_head.0.weight and param/contrast_head.2.weight).
func ReadHead(path, name string, enc Encoder) (*Head, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("head: %w", err)
	}
	byName := map[string]safetensors.Tensor{}
	for _, t := range f.Tensors {
		byName[t.Name] = t
	}
	layer := func(i int) ([]float32, []int64, error) {
		key := fmt.Sprintf("%s%s.%d.weight", checkpoint.ParamPrefix, name, i)
		t, ok := byName[key]
		if !ok {
			return nil, nil, fmt.Errorf("%s: no tensor %s: the checkpoint holds no head named %q", path, key, name)
		}
		if len(t.Shape) != 2 {
			return nil, nil, fmt.Errorf("%s: %s has shape %v, want a matrix", path, key, t.Shape)
		}
		v, err := t.Float32s()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", path, key, err)
		}
		return v, t.Shape, nil
	}
	w1, s1, err := layer(0)
	if err != nil {
		return nil, err
	}
	w2, s2, err := layer(2)
	if err != nil {
		return nil, err
	}
	if s1[0] != s1[1] || s2[1] != s1[0] {
		return nil, fmt.Errorf("%s: head layers of shapes %v and %v, want [d,d] and [out,d]", path, s1, s2)
	}
	return &Head{Enc: enc, W1: w1, W2: w2, D: int(s1[0]), Out: int(s2[0])}, nil
}

// Over is the same head over another encoder (a session's contexts beside its single texts).
func (h *Head) Over(enc Encoder) *Head {
	o := *h
	o.Enc = enc
	return &o
}

// Embed embeds texts with the encoder and maps each vector through the head.
func (h *Head) Embed(texts []string) ([][]float32, error) {
	vecs, err := h.Enc.Embed(texts)
	if err != nil {
		return nil, err
	}
	hidden := make([]float32, h.D)
	out := make([][]float32, len(vecs))
	for n, v := range vecs {
		if len(v) != h.D {
			return nil, fmt.Errorf("head: an embedding of %d values, the head takes %d", len(v), h.D)
		}
		for i := range hidden {
			hidden[i] = max(0, float32(dot(h.W1[i*h.D:(i+1)*h.D], v)))
		}
		row := make([]float32, h.Out)
		for i := range row {
			row[i] = float32(dot(h.W2[i*h.D:(i+1)*h.D], hidden))
		}
		out[n] = row
	}
	return out, nil
}
