package dse

import (
	"fmt"
	"runtime"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/inputs"
)

// pairSet is the dataset of DSE and SimCSE: tokenised (query, response) pairs of the variant (PairOptions),
// cached on disk.
type pairSet struct {
	pairs *datasets.TokenizedPairs
	pad   int64
	// qWidth and rWidth, with fixed shapes (DataEnv.FixedShapes), are the longest query and response of the
	// whole set, which every batch is padded to; 0 pads each batch to its own longest.
	qWidth, rWidth int
}

// NewPairs is the pairs of variant, a k-1 query fitted to its budget as cut says ("" = QueryCutWords).
func NewPairs(env objectives.DataEnv, variant string, cut QueryCut) (objectives.Dataset, error) {
	log := env.Logger()
	sep, _ := env.Tok.SpecialToken("sep_token")
	popt := PairOptions{Variant: variant, MinWords: env.MinWords, Sep: datasets.SepFor(sep), BothDirections: env.BothDirections,
		QueryCut: cut}
	pkey, err := popt.Key()
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	// A k-1 query gets k × model.max_length tokens (DSE §4.4 as the authors ran it), at most the model's
	// positions (TokenizePairs); say so when that cap bites.
	if k := popt.MaxQueryUtterances(); k > 1 && env.MaxLength > 0 {
		if got := QueryBudget(k, env.MaxLength, env.Tok); got < k*env.MaxLength {
			log.Warn("multi-utterance queries get fewer tokens than the paper's k × max_length: the tokenizer's model_max_length caps them",
				zap.String("pairs", popt.Variant), zap.Int("utterances", k), zap.Int("want", k*env.MaxLength), zap.Int("tokens", got))
		}
	}
	key := datasets.CacheKey{Corpora: env.Corpora, CorpusFiles: env.Files, TokenizerDir: env.TokDir, Tokenizer: env.Tok, Pairs: pkey,
		MaxLength: env.MaxLength, Truncation: env.Truncation, MergeSpeakers: env.Read.MergeSameSpeaker,
		MetaLWOZMultiWOZ: env.Read.MetaLWOZMultiWOZ,
		Files:            env.Read.Files, // data.files: each hashed whole, with the column and speaker mapping
		Extra:            []string{fmt.Sprintf("skip_bad=%v", env.Read.SkipBad), fmt.Sprintf("max_examples=%d seed=%d", env.MaxExamples, env.Seed)}}
	build := func() (*datasets.TokenizedPairs, error) {
		ds, err := env.ReadDialogues()
		if err != nil {
			return nil, err
		}
		pairs, err := DSEPairs(ds, popt)
		if err != nil {
			return nil, err
		}
		log.Info("built pairs", zap.Int("dialogues", len(ds)), zap.Int("pairs", len(pairs)), zap.String("variant", popt.Variant))
		if env.MaxExamples > 0 && len(pairs) > env.MaxExamples {
			datasets.Shuffle(pairs, env.Seed) // a random subset, the same for every run of this seed
			pairs = pairs[:env.MaxExamples]
		}
		return TokenizePairs(pairs, popt.QueryCut, env.Tok, env.MaxLength, env.Truncation, runtime.NumCPU())
	}
	var tp *datasets.TokenizedPairs
	var hit bool
	if env.Streams() {
		// The user's own files: pairs built dialogue by dialogue (§3.1, §4.4: consecutive utterances of one
		// dialogue) and tokenised into the cache as the files stream in, so the build holds one dialogue and
		// the cache's index, never the corpus.
		key.Streamed, key.Holdout = true, env.HoldoutRule()
		tp, hit, err = datasets.CachedPairsStream(env.CacheDir, key, datasets.PairStream{
			Each: env.EachDialogue, NewPairer: func() (datasets.Pairer, error) { return NewPairBuilder(popt) },
			Fit: popt.QueryCut.Fit, Tok: env.Tok, MaxLength: env.MaxLength, Truncation: env.Truncation,
			Workers: runtime.NumCPU(), MaxExamples: env.MaxExamples, Seed: env.Seed}, log)
	} else {
		tp, hit, err = datasets.CachedPairsLog(env.CacheDir, key, build, log)
	}
	if err != nil {
		return nil, err
	}
	log.Info("pairs ready", zap.Int("pairs", tp.Len()), zap.Bool("from_cache", hit))
	d := &pairSet{pairs: tp, pad: env.Tok.PadID()}
	if env.FixedShapes {
		for i := range tp.Query {
			d.qWidth, d.rWidth = max(d.qWidth, len(tp.Query[i])), max(d.rWidth, len(tp.Response[i]))
		}
		log.Info("batches padded to fixed widths (CUDA graphs)", zap.Int("query", d.qWidth), zap.Int("response", d.rWidth))
	}
	return d, nil
}

func (d *pairSet) Len() int { return d.pairs.Len() }

func (d *pairSet) Batch(idx []int, dev gotch.Device) (objectives.Batch, error) {
	q, r := make([][]int32, len(idx)), make([][]int32, len(idx))
	for i, j := range idx {
		q[i], r[i] = d.pairs.Query[j], d.pairs.Response[j]
	}
	query, err := models.BatchInput(inputs.PaddedTo(q, d.pad, d.qWidth), dev)
	if err != nil {
		return objectives.Batch{}, err
	}
	resp, err := models.BatchInput(inputs.PaddedTo(r, d.pad, d.rWidth), dev)
	if err != nil {
		query.Drop()
		return objectives.Batch{}, err
	}
	return objectives.Batch{Value: Batch{Query: query, Response: resp}, Drop: func() { query.Drop(); resp.Drop() }}, nil
}
