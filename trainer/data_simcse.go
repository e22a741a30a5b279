package trainer

import (
	"fmt"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/objectives"
	"convrep/tokenizers"
)

func init() { registerDataset(objectives.SimCSEName, newSimCSEPairs) }

// newSimCSEPairs builds SimCSE's data: every distinct utterance paired with itself, DSE's "dropout" pairs
// (the same data path and cache). data.pairs must be "dropout" or left out.
func newSimCSEPairs(e *Experiment, tok *tokenizers.Tokenizer, tokDir string, files []string, trunc tokenizers.Truncation, log *zap.Logger) (Dataset, error) {
	c := *e
	switch c.Data.Pairs {
	case datasets.VariantDropout, datasets.VariantDSE: // "dse" is the default of a file that names none
		c.Data.Pairs = datasets.VariantDropout
	default:
		return nil, fmt.Errorf("data.pairs = %q: simcse trains on %q pairs (one utterance twice)", c.Data.Pairs, datasets.VariantDropout)
	}
	return newDSEPairs(&c, tok, tokDir, files, trunc, log)
}
