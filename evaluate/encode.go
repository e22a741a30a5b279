package evaluate

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"convrep/internal/cli/progress"
)

// Encoder embeds texts, one vector per text in order. models.Embedder is one (masked mean of the last layer,
// DSE §4.2); tests use hand-made ones.
type Encoder interface {
	Embed(texts []string) ([][]float32, error)
}

// Session embeds the texts of one or more tasks with one model. Each distinct text is embedded once and kept,
// L2-normalised, so that tasks sharing texts (CLINC150 intent and out-of-scope detection) share the work.
type Session struct {
	Model   string  // the model's name in outputs
	Enc     Encoder // utterances, responses
	Context Encoder // dialogue histories (truncated from the head to keep the latest turns); nil = Enc
	Sep     string  // joins a history's turns into one text, e.g. " [SEP] "
	// ResponseEnc, when set, embeds response-selection candidates, Enc and Context the queries: a dual encoder
	// such as MGT's (§3.1, "two distinct encoders"). nil = Enc.
	ResponseEnc Encoder
	// Raw keeps embeddings as the encoders return them, so that response selection scores by the dot product
	// α = cᵀr (MGT Eq. 4-5) rather than the cosine. Only response selection takes a Raw session.
	Raw   bool
	Batch int // texts per forward pass; 0 = 64
	// Progress receives the embedding progress bar (nil draws none).
	Progress io.Writer

	cache map[string][]float32
}

// Fresh is a copy of s with an empty cache of embeddings: for the same model read with other encoder
// settings (another input length), whose embeddings differ from s's.
func (s *Session) Fresh() *Session {
	c := *s
	c.cache = nil
	return &c
}

// textKind tells apart a single utterance and a joined dialogue history that happens to have the same text,
// since the two are embedded by different encoders.
type textKind byte

const (
	utterance textKind = 'u'
	history   textKind = 'h'
	response  textKind = 'r' // a candidate response, embedded by ResponseEnc when set
)

// Embed returns the L2-normalised embeddings of utterances, in order (each distinct text embedded once).
func (s *Session) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return s.embed(ctx, utterance, texts)
}

// embed returns the normalised embeddings of texts (unnormalised for a Raw session), in order, embedding only
// those not seen before.
// Texts are sorted by length before batching so that a batch pads little.
func (s *Session) embed(ctx context.Context, kind textKind, texts []string) ([][]float32, error) {
	if s.cache == nil {
		s.cache = map[string][]float32{}
	}
	enc := s.Enc
	if kind == history && s.Context != nil {
		enc = s.Context
	}
	if kind == response {
		if s.ResponseEnc == nil {
			kind = utterance // the same encoder, the same cache entries
		} else {
			enc = s.ResponseEnc
		}
	}
	if enc == nil {
		return nil, fmt.Errorf("embed: no encoder")
	}
	key := func(t string) string { return string(kind) + t }
	var todo []string
	queued := map[string]bool{}
	for _, t := range texts {
		if _, ok := s.cache[key(t)]; !ok && !queued[t] {
			queued[t] = true
			todo = append(todo, t)
		}
	}
	sort.SliceStable(todo, func(i, j int) bool { return len(todo[i]) < len(todo[j]) })
	batch := s.Batch
	if batch <= 0 {
		batch = 64
	}
	bar := progress.New(s.Progress, "embedding", "texts", int64(len(todo)), 0)
	for start := 0; start < len(todo); start += batch {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("embed: stopped after %d of %d texts: %w", start, len(todo), err)
		}
		end := min(start+batch, len(todo))
		vecs, err := enc.Embed(todo[start:end])
		if err != nil {
			return nil, fmt.Errorf("embed texts %d-%d of %d: %w", start+1, end, len(todo), err)
		}
		if len(vecs) != end-start {
			return nil, fmt.Errorf("embed: the encoder returned %d vectors for %d texts", len(vecs), end-start)
		}
		for i, v := range vecs {
			if s.Raw {
				s.cache[key(todo[start+i])] = append([]float32(nil), v...)
			} else {
				s.cache[key(todo[start+i])] = normalized(v)
			}
		}
		bar.Add(end - start)
	}
	bar.Finish()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = s.cache[key(t)]
	}
	return out, nil
}

// JoinHistory turns a dialogue history into the text its encoder reads.
func (s *Session) JoinHistory(turns []string) string { return strings.Join(turns, s.Sep) }

// normalized returns v / ‖v‖ (a zero vector stays zero), as DSE L2-normalises embeddings before comparing.
func normalized(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if ss == 0 {
		return out
	}
	inv := 1 / math.Sqrt(ss)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// dot is the inner product, accumulated in float64.
func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
