package trainer

import (
	"fmt"
	"runtime"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/models"
	"convrep/objectives"
	"convrep/tokenizers"
)

func init() { registerDataset(objectives.DSEName, newDSEPairs) }

// dsePairs is the dataset of DSE and its variants: tokenised (query, response) pairs, cached on disk.
type dsePairs struct {
	pairs *datasets.TokenizedPairs
	pad   int64
}

func newDSEPairs(e *Experiment, tok *tokenizers.Tokenizer, tokDir string, files []string, trunc tokenizers.Truncation, log *zap.Logger) (Dataset, error) {
	sep, _ := tok.SpecialToken("sep_token")
	popt := datasets.PairOptions{Variant: e.Data.Pairs, MinWords: e.Data.MinWords, Sep: datasets.SepFor(sep), BothDirections: e.Data.BothDirections}
	if err := popt.Validate(); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	key := datasets.CacheKey{Corpora: e.Data.Corpora, CorpusFiles: files, TokenizerDir: tokDir, Tokenizer: tok, Pairs: popt,
		MaxLength: e.Model.MaxLength, Truncation: trunc, MergeSpeakers: e.Data.MergeSameSpeaker,
		Extra: []string{fmt.Sprintf("skip_bad=%v", e.Data.SkipBad), fmt.Sprintf("max_examples=%d seed=%d", e.Data.MaxExamples, e.Seed)}}
	build := func() (*datasets.TokenizedPairs, error) {
		ds, err := datasets.ReadAll(e.Data.Root, e.Data.Corpora, datasets.ReadOptions{SkipBad: e.Data.SkipBad, MergeSameSpeaker: e.Data.MergeSameSpeaker, Logger: log})
		if err != nil {
			return nil, err
		}
		pairs, err := datasets.DSEPairs(ds, popt)
		if err != nil {
			return nil, err
		}
		log.Info("built pairs", zap.Int("dialogues", len(ds)), zap.Int("pairs", len(pairs)), zap.String("variant", popt.Variant))
		if e.Data.MaxExamples > 0 && len(pairs) > e.Data.MaxExamples {
			datasets.Shuffle(pairs, e.Seed) // a random subset, the same for every run of this seed
			pairs = pairs[:e.Data.MaxExamples]
		}
		return datasets.TokenizePairs(pairs, tok, e.Model.MaxLength, trunc, runtime.NumCPU())
	}
	tp, hit, err := datasets.CachedPairsLog(e.Data.CacheDir, key, build, log)
	if err != nil {
		return nil, err
	}
	log.Info("pairs ready", zap.Int("pairs", tp.Len()), zap.Bool("from_cache", hit))
	return &dsePairs{pairs: tp, pad: tok.PadID()}, nil
}

func (d *dsePairs) Len() int { return d.pairs.Len() }

func (d *dsePairs) Batch(idx []int, dev gotch.Device) (Batch, error) {
	q, r := make([][]int32, len(idx)), make([][]int32, len(idx))
	for i, j := range idx {
		q[i], r[i] = d.pairs.Query[j], d.pairs.Response[j]
	}
	query, err := models.BatchInput(padded(q, d.pad), dev)
	if err != nil {
		return Batch{}, err
	}
	resp, err := models.BatchInput(padded(r, d.pad), dev)
	if err != nil {
		query.Drop()
		return Batch{}, err
	}
	return Batch{Value: objectives.DSEBatch{Query: query, Response: resp}, Drop: func() { query.Drop(); resp.Drop() }}, nil
}
