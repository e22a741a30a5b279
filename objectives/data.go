package objectives

import (
	"fmt"

	"github.com/sugarme/gotch"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/models"
	"convrep/tokenizers"
)

// DataEnv is what an objective's dataset is built from: the experiment's [data] and [model] choices that
// concern examples, the tokenizer (with the objective's special tokens), and the run's place among the
// data-parallel ranks. The trainer fills it; an objective reads what it needs.
type DataEnv struct {
	Root    string   // data.root
	Corpora []string // data.corpora
	Files   []string // the corpora's files, checked to exist (they key the caches)
	// Read are data.skip_bad and data.merge_same_speaker, with the logger.
	Read datasets.ReadOptions
	// Pairs, BothDirections and MinWords are data.pairs, data.both_directions and data.min_words (DSE's
	// pairs, §3.1 and Appendix A.1).
	Pairs          string
	BothDirections bool
	MinWords       int
	MaxExamples    int    // data.max_examples: 0 = all
	CacheDir       string // data.cache_dir

	Tok        *tokenizers.Tokenizer
	TokDir     string
	MaxLength  int                   // model.max_length
	Truncation tokenizers.Truncation // model.truncation
	Seed       int64
	Device     gotch.Device

	// FixedShapes asks for batches padded to fixed widths rather than to their longest row (CUDA graphs
	// replay one shape; see Static).
	FixedShapes bool

	// BatchSize is train.batch_size, the global batch; Ranks the number of data-parallel ranks it is split
	// over (1 without data parallelism).
	BatchSize, Ranks int
	Log              *zap.Logger

	// Encoder builds a second encoder: the experiment's backbone as a run starts from it, with its random
	// parts seeded by seed (MGT's frozen encoder that orders the response pool, §3.3). libtorch's generator
	// is left as it was found.
	Encoder func(seed int64) (*models.Model, error)

	// Holdout, when set, splits the dialogues into training and validation ones (train.valid_share):
	// ReadDialogues returns this side's only.
	Holdout *Holdout
}

// RankBatch is the share of the global batch one rank processes.
func (e DataEnv) RankBatch() int { return e.BatchSize / max(e.Ranks, 1) }

// ReadDialogues reads the experiment's corpora: with a Holdout, its side of them.
func (e DataEnv) ReadDialogues() ([]datasets.Dialogue, error) {
	if e.Streams() {
		var ds []datasets.Dialogue
		err := e.EachDialogue(func(d datasets.Dialogue) error {
			ds = append(ds, d)
			return nil
		})
		if err != nil {
			return nil, err
		}
		return ds, nil
	}
	ds, err := datasets.ReadAll(e.Root, e.Corpora, e.Read)
	if err != nil || e.Holdout == nil {
		return ds, err
	}
	return e.Holdout.apply(ds)
}

// Streams reports whether the dialogues can be read one at a time: the user's own files alone (data.files
// without data.corpora), which the file readers stream. The corpora's readers give a whole corpus at once,
// and their hold-out (HeldOut) chooses from all of them, so experiments on corpora read them whole as they
// always have.
func (e DataEnv) Streams() bool { return e.Read.Files != nil && len(e.Corpora) == 0 }

// EachDialogue hands this side's dialogues to fn one at a time, in reading order, and returns fn's first
// error. Where the data stream (Streams), no more than one dialogue is held and a Holdout decides each as it
// comes (HeldOutStreamed); otherwise the dialogues are read whole first (ReadDialogues).
func (e DataEnv) EachDialogue(fn func(datasets.Dialogue) error) error {
	if !e.Streams() {
		ds, err := e.ReadDialogues()
		if err != nil {
			return err
		}
		for _, d := range ds {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}
	files := *e.Read.Files
	n := 0
	each := func(fn func(datasets.Dialogue) error) error {
		return files.EachDialogue(e.Read, func(_ string, d datasets.Dialogue) error { return fn(d) })
	}
	count := func(d datasets.Dialogue) error { n++; return fn(d) }
	var err error
	if e.Holdout == nil {
		err = each(count)
	} else {
		err = e.Holdout.stream(each, count)
	}
	if err != nil {
		return err
	}
	e.Logger().Info("read files", zap.Strings("files", files.Paths), zap.Int("dialogues", n))
	return nil
}

// HoldoutRule names the streamed hold-out of this side for a cache key (datasets.CacheKey.Holdout): "" where
// the data do not stream or nothing is held out.
func (e DataEnv) HoldoutRule() string {
	if e.Holdout == nil || !e.Streams() {
		return ""
	}
	return e.Holdout.streamedRule()
}

// Logger is e.Log, or a no-op logger.
func (e DataEnv) Logger() *zap.Logger {
	if e.Log == nil {
		return zap.NewNop()
	}
	return e.Log
}

// BatchAs gives the batch an objective's Loss was handed as its own type B, accepting B or a non-nil *B.
func BatchAs[B any](objective string, batch any) (B, error) {
	var zero B
	switch x := batch.(type) {
	case B:
		return x, nil
	case *B:
		if x != nil {
			return *x, nil
		}
		return zero, fmt.Errorf("%s loss: nil batch", objective)
	}
	return zero, fmt.Errorf("%s loss: batch is %T, want %T", objective, batch, zero)
}
