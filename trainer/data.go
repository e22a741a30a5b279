package trainer

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/datasets"
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

// padded right-pads token ids to the longest row, with a 1/0 attention mask and zero token types.
func padded[T int32 | int64](rows [][]T, pad int64) *tokenizers.Batch {
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

// DatasetBuilder builds an objective's dataset from the experiment's corpora (files, checked to exist) and
// tokenizer (read from tokDir).
type DatasetBuilder func(e *Experiment, tok *tokenizers.Tokenizer, tokDir string, files []string, trunc tokenizers.Truncation, log *zap.Logger) (Dataset, error)

// datasetBuilders maps objective names to their datasets; each objective's dataset registers itself from its
// own file (data_<objective>.go), so adding one touches no other file.
var datasetBuilders = map[string]DatasetBuilder{}

func registerDataset(objective string, b DatasetBuilder) {
	if _, taken := datasetBuilders[objective]; taken {
		panic("trainer: dataset registered twice for objective " + objective) // a programming error, found by any test
	}
	datasetBuilders[objective] = b
}

// datasetFor builds the dataset the objective trains on.
func datasetFor(objective string, e *Experiment, tok *tokenizers.Tokenizer, tokDir string, files []string, trunc tokenizers.Truncation, log *zap.Logger) (Dataset, error) {
	if b, ok := datasetBuilders[objective]; ok {
		return b(e, tok, tokDir, files, trunc, log)
	}
	return nil, fmt.Errorf("objective %q has no dataset in the trainer yet", objective)
}
