package models_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/internal/shared"
	"convrep/models"
	"convrep/tokenizers"
)

// tinyEmbedder is the fixtures' tiny BERT (HuggingFace's weights and tokenizer) as an Embedder.
func tinyEmbedder(t *testing.T, maxLength int) *models.Embedder {
	t.Helper()
	dir := shared.MustPath(t, "fixtures", "tiny-bert")
	m, err := models.Load(dir, models.LoadOptions{Device: gotch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizers.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &models.Embedder{Model: m, Tokenizer: tok, Pooling: models.Mean, MaxLength: maxLength}
}

// TestEmbedAllIsEachTextAlone holds EmbedAll, which sorts by length and pads each batch to its longest text,
// to the vector each text gets in a batch of its own, in input order, for texts of very different lengths.
func TestEmbedAllIsEachTextAlone(t *testing.T) {
	e := tinyEmbedder(t, 64)
	texts := []string{
		strings.Repeat("i would like to book a table for two people tonight please ", 8),
		"hi",
		"what time does the train to cambridge leave on friday?",
		"",
		"yes",
		strings.Repeat("the hotel should be in the north and have free parking ", 3),
	}
	var done int
	got, err := e.EmbedAll(context.Background(), texts, 4, func(n int) { done += n })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(texts) || done != len(texts) {
		t.Fatalf("EmbedAll gave %d vectors and reported %d done for %d texts", len(got), done, len(texts))
	}
	for i, text := range texts {
		alone, err := e.Embed([]string{text})
		if err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(got[i], alone[0]); d > 1e-5 {
			t.Errorf("text %d (%d bytes): EmbedAll's vector differs from its own batch's by %.3g", i, len(text), d)
		}
	}
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}
