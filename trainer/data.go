package trainer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/models"
	"convrep/objectives"
	"convrep/tokenizers"
)

// Dataset gives the trainer batches of an objective's own type.
type Dataset interface {
	// Len is the number of examples.
	Len() int
	// Batch builds the batch of the examples at idx, on dev; Drop frees its tensors.
	Batch(idx []int, dev gotch.Device) (Batch, error)
}

// Batch is one objective batch (Value is what the objective's Loss type-asserts).
type Batch struct {
	Value any
	Drop  func()
}

// corpusFiles checks that every corpus of the experiment is present and lists the files it is read from.
// It runs before any work, so that a wrong path fails at once, naming what is missing.
func corpusFiles(d DataConfig) ([]string, error) {
	if _, err := os.Stat(d.Root); err != nil {
		return nil, fmt.Errorf("data.root: %w", err)
	}
	var files []string
	for _, name := range d.Corpora {
		c, err := datasets.LookupCorpus(name)
		if err != nil {
			return nil, fmt.Errorf("data.corpora: %w", err)
		}
		fs, err := datasets.Files(name, filepath.Join(d.Root, c.Folder))
		if err != nil {
			return nil, fmt.Errorf("data.corpora: %w", err)
		}
		if len(fs) == 0 {
			return nil, fmt.Errorf("data.corpora: corpus %s: no files in %s", name, filepath.Join(d.Root, c.Folder))
		}
		files = append(files, fs...)
	}
	return files, nil
}

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

// padded right-pads token ids to the longest row, with a 1/0 attention mask and zero token types.
func padded(rows [][]int32, pad int64) *tokenizers.Batch {
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	b := &tokenizers.Batch{}
	for _, r := range rows {
		ids, mask := make([]int64, width), make([]int64, width)
		for j := range ids {
			if j < len(r) {
				ids[j], mask[j] = int64(r[j]), 1
			} else {
				ids[j] = pad
			}
		}
		b.InputIDs = append(b.InputIDs, ids)
		b.AttentionMask = append(b.AttentionMask, mask)
		b.TokenTypeIDs = append(b.TokenTypeIDs, make([]int64, width))
		b.Lengths = append(b.Lengths, len(r))
	}
	return b
}

// datasetFor builds the dataset the objective trains on.
func datasetFor(objective string, e *Experiment, tok *tokenizers.Tokenizer, tokDir string, files []string, trunc tokenizers.Truncation, log *zap.Logger) (Dataset, error) {
	switch objective {
	case objectives.DSEName:
		return newDSEPairs(e, tok, tokDir, files, trunc, log)
	}
	return nil, fmt.Errorf("objective %q has no dataset in the trainer yet", objective)
}
