package suite

import (
	"context"
	"math"
	"path/filepath"
	"sort"
	"testing"

	"go.uber.org/zap/zaptest"

	"convrep/evaluate"
	"convrep/internal/shared"
	"convrep/models"
	"convrep/objectives/mgt/mgttest"
	"convrep/tokenizers"
)

// An MGT run loaded for response Selection embeds contexts with its context encoder and candidates with its
// response encoder, and ranks candidates by α = cᵀr (MGT Eq. 4): the session's Top-1 and MRR must be those
// of ranking by the dot product of the two encoders' own embeddings, computed here directly. For the other
// tasks the same run is one encoder (no response encoder, normalised embeddings).
func TestMGTRunScoresByDotProductOfBothEncoders(t *testing.T) {
	tok, err := tokenizers.Load(shared.MustPath(t, "data", "vocab", "bert-base-uncased"))
	if err != nil {
		t.Fatal(err)
	}
	vocab := int64(tok.VocabSize())
	ctxModel, respModel := mgttest.Encoder(t, vocab, 21), mgttest.Encoder(t, vocab, 22)
	run := mgttest.Run(t, filepath.Join(t.TempDir(), "mgt_single"), tok, ctxModel, respModel)
	log := zaptest.NewLogger(t)
	ref := Model{Ref: run, Device: "cpu", MaxLength: 32, Batch: 4}

	plain, err := Open(context.Background(), ref, log)
	if err != nil {
		t.Fatal(err)
	}
	if plain.ResponseEnc != nil || plain.Raw {
		t.Fatalf("outside response Selection the run is one encoder by cosine; got ResponseEnc %v, Raw %v", plain.ResponseEnc != nil, plain.Raw)
	}
	ref.Dual = true
	s, err := Open(context.Background(), ref, log)
	if err != nil {
		t.Fatal(err)
	}
	if s.ResponseEnc == nil || !s.Raw {
		t.Fatalf("an MGT run for response selection: ResponseEnc %v, Raw %v; want its response encoder and raw scores", s.ResponseEnc != nil, s.Raw)
	}

	set := &evaluate.RetrievalSet{Dataset: "toy", Source: "toy", Contexts: [][]string{
		{"i need a cheap hotel in the north"}, {"book a table for two at seven"}, {"what time does the train leave"},
		{"is there free parking"}, {"find me an italian restaurant"}, {"i want to go to cambridge on friday"},
	}, Responses: []string{
		"there are two cheap hotels in the north", "your table is booked", "it leaves at 9:15",
		"yes, parking is free", "pizza hut is italian and in the centre", "there are ten trains on friday",
	}}
	n := len(set.Responses)
	direct := func(m *models.Model, texts []string, trunc tokenizers.Truncation) [][]float32 {
		e := &models.Embedder{Model: m, Tokenizer: tok, Pooling: models.Mean, MaxLength: 32, Truncation: trunc}
		v, err := e.Embed(texts)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var queries []string
	for _, c := range set.Contexts {
		queries = append(queries, c[0])
	}
	c := direct(ctxModel, queries, tokenizers.TruncateRight)
	r := direct(respModel, set.Responses, tokenizers.TruncateRight)
	// With every response a candidate of every query, the candidate lists do not depend on the draw.
	var top1, mrr float64
	for i := range n {
		scores := make([]float64, n)
		for j := range n {
			for k := range c[i] {
				scores[j] += float64(c[i][k]) * float64(r[j][k])
			}
		}
		truth := scores[i]
		sort.Float64s(scores)
		rank := 0 // ties rank the truth last among equals
		for _, x := range scores {
			if x >= truth {
				rank++
			}
		}
		if rank == 1 {
			top1 += 1 / float64(n)
		}
		mrr += 1 / float64(rank) / float64(n)
	}
	res, err := s.Response(context.Background(), evaluate.ResponseTask{Set: set, Size: n, Seeds: []uint64{0}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, row := range res.Rows {
		got[row.Metric] = row.Mean
	}
	t.Logf("cᵀr by hand: top-1 %.3f, MRR %.3f; session %v", top1, mrr, got)
	for metric, want := range map[string]float64{"top1": top1, "mrr": mrr} {
		v, ok := got[metric]
		if !ok {
			t.Fatalf("no %s row in %v", metric, got)
		}
		if math.Abs(v-want) > 1e-9 {
			t.Errorf("%s = %.6f, want %.6f (ranking by the dot product of context and response encoders)", metric, v, want)
		}
	}
	// The response encoder really is the checkpoint's: its embeddings are respModel's, not the context encoder's.
	v, err := s.ResponseEnc.Embed(set.Responses[:1])
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b []float32) bool {
		for k := range a {
			if math.Abs(float64(a[k]-b[k])) > 1e-6 {
				return false
			}
		}
		return true
	}
	if !same(v[0], r[0]) || same(v[0], direct(ctxModel, set.Responses[:1], tokenizers.TruncateRight)[0]) {
		t.Error("the session's response encoder is not the checkpoint's response encoder")
	}
}
