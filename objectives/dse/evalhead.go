package dse

import (
	"fmt"

	"github.com/sugarme/gotch"

	"convrep/checkpoint"
	"convrep/models"
	"convrep/objectives"
	"convrep/rundir"
)

// evaluation is what evaluation asks of DSE (objectives.Evaluation): the contrastive head of its checkpoints.
// DSE trains one encoder and defines no ensemble.
type evaluation struct{}

func (evaluation) ResponseEncoder(*models.Config, string, gotch.Device) (*models.Model, error) {
	return nil, nil
}

func (evaluation) Head(path, name string) (objectives.Head, error) { return readHead(path, name) }

func (evaluation) Ensemble([][][]float64) ([][]float64, error) { return nil, nil }

// evalHead is the contrastive head (contrastHead, DSE §3.1's g(·)) read back from a checkpoint for
// evaluation: Linear(d,d) → ReLU → Linear(d,out), both without bias, computed in Go on an encoder's pooled
// embeddings. Evaluating through it shows the space the contrastive loss compares, beside the mean-pooled
// encoder the papers evaluate.
type evalHead struct {
	Enc    objectives.TextEncoder
	W1, W2 []float32 // [d·d] and [out·d], row-major, torch.nn.Linear's layout (out × in)
	D, Out int
}

// readHead reads the head a trainer checkpoint holds under name (DSE's is "contrast_head": its tensors are
// param/contrast_head.0.weight and param/contrast_head.2.weight).
func readHead(path, name string) (*evalHead, error) {
	byName, err := rundir.Weights(path)
	if err != nil {
		return nil, fmt.Errorf("head: %w", err)
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
	return &evalHead{W1: w1, W2: w2, D: int(s1[0]), Out: int(s2[0])}, nil
}

// Over is the head over the encoder enc (a session's single texts, its contexts).
func (h *evalHead) Over(enc objectives.TextEncoder) objectives.TextEncoder {
	o := *h
	o.Enc = enc
	return &o
}

// Embed embeds texts with the encoder and maps each vector through the head.
func (h *evalHead) Embed(texts []string) ([][]float32, error) {
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

// dot is the inner product, accumulated in float64 (as evaluate's cosine).
func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
