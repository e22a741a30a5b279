package buckets

import (
	"runtime"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/datasets"
	"convrep/internal/shared"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/tokenizers"
)

// sharedPool reads the named shared corpora, makes MGT's examples, tokenises the response pool with the
// bert-base-uncased vocabulary and embeds it with a small random BERT (seeded), as a run's frozen encoder
// would. It returns the examples and the pool of unit embeddings.
func sharedPool(t testing.TB, corpora []string, layers, hidden int64) (*Examples, *Pool) {
	t.Helper()
	root := shared.MustPath(t, "data", "pretrain")
	tok, err := tokenizers.Load(shared.MustPath(t, "data", "vocab", "bert-base-uncased"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := datasets.ReadAll(root, corpora, datasets.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ex := BuildExamples(ds, ExampleOptions{SystemOnly: true, Sep: datasets.SepFor("[SEP]")})
	if len(ex.GT) == 0 {
		t.Fatalf("no examples in %v", corpora)
	}
	pairs := make([]datasets.Pair, len(ex.Pool))
	for i, s := range ex.Pool {
		pairs[i] = datasets.Pair{Query: s, Response: "."}
	}
	tp, err := datasets.TokenizePairs(pairs, tok, 32, tokenizers.TruncateRight, runtime.NumCPU())
	if err != nil {
		t.Fatal(err)
	}
	if err := torch.ManualSeed(11); err != nil {
		t.Fatal(err)
	}
	c := &models.Config{Arch: models.BERT, VocabSize: int64(tok.VocabSize()), HiddenSize: hidden, NumLayers: layers, NumHeads: 2,
		IntermediateSize: 2 * hidden, HiddenAct: "gelu", MaxPositions: 64, TypeVocabSize: 2, LayerNormEps: 1e-12,
		InitializerRange: 0.02, PadTokenID: tok.PadID()}
	m, err := models.New(c, models.Heads{}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := EmbedTokens(m, tp.Query, tok.PadID(), models.Mean, 512, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPool(vecs, int(hidden))
	if err != nil {
		t.Fatal(err)
	}
	return ex, p
}

// TestSharedCorporaSegmentsOrdered builds MGT's L = 5 segments (k = 20) over the system responses of two
// shared corpora and wants their mean cosine to the ground truth strictly falling from segment 1 to 5.
func TestSharedCorporaSegmentsOrdered(t *testing.T) {
	ex, p := sharedPool(t, []string{"woz2", "camrest676"}, 1, 64)
	n, err := Build(p, ex.GT, Options{Segments: 5, Negatives: 19, Sample: 1000, Seed: 1234})
	if err != nil {
		t.Fatal(err)
	}
	checkDistinct(t, ex.GT, n)
	sim := SegmentSimilarity(p, ex.GT, n)
	t.Logf("%d examples, %d distinct responses; mean cosine by segment %.4f", len(ex.GT), p.N, sim)
	for l := 1; l < len(sim); l++ {
		if !(sim[l-1] > sim[l]) {
			t.Fatalf("mean cosine by segment %v: not strictly falling at segment %d", sim, l+1)
		}
	}
}

// TestEmbedTokensKeepsOrder embeds rows in batches sorted by length and wants each row's vector where the row
// was, equal to the vector of the row embedded alone (padding must not leak into mean pooling).
func TestEmbedTokensKeepsOrder(t *testing.T) {
	if err := torch.ManualSeed(3); err != nil {
		t.Fatal(err)
	}
	c := &models.Config{Arch: models.BERT, VocabSize: 30, HiddenSize: 8, NumLayers: 1, NumHeads: 2, IntermediateSize: 16,
		HiddenAct: "gelu", MaxPositions: 16, TypeVocabSize: 2, LayerNormEps: 1e-12, InitializerRange: 0.02}
	m, err := models.New(c, models.Heads{}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]int32{{2, 5, 6, 7, 3}, {2, 9, 3}, {2, 11, 12, 3}, {2, 4, 3}, {2, 20, 21, 22, 23, 24, 3}}
	all, err := EmbedTokens(m, rows, 0, models.Mean, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		one, err := EmbedTokens(m, [][]int32{r}, 0, models.Mean, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		for j := range one {
			if d := one[j] - all[i*8+j]; d > 1e-5 || d < -1e-5 {
				t.Fatalf("row %d value %d: %v in a batch, %v alone", i, j, all[i*8+j], one[j])
			}
		}
	}
}
