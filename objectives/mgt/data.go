package mgt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/models"
	"convrep/models/sbert"
	"convrep/objectives"
	"convrep/objectives/inputs"
	"convrep/objectives/mgt/buckets"
	"convrep/rundir"
	"convrep/tokenizers"
)

// mgtData is MGT's training set: tokenised contexts, the tokenised response pool R, each example's ground
// truth in R and its k−1 negatives (fixed once, as Eq. 8 and 12 build the corpora T and T^l).
type mgtData struct {
	contexts [][]int32
	pool     [][]int32
	gt       []int32
	negs     *buckets.Negatives
	segment  int // which of negs' segments this run trains on
	k        int64
	pad      int64
	report   Report
}

var _ objectives.Reporter = (*mgtData)(nil)

// Report says what building MGT's data cost, and the memory its pool and negatives take: the dataset's
// Report (objectives.Reporter), which `convrep data prepare` prints.
type Report struct {
	Examples, Pool, Dim int
	ReadS, TokenizeS    float64
	EmbedS, BucketS     float64
	EmbedHit, NegHit    bool
	// SegmentEncoder is the run whose response encoder ordered the pool ("" = the untrained backbone), and
	// SegmentEncoderDigest the start of its weights' digest, which keys the caches (mgt only).
	SegmentEncoder, SegmentEncoderDigest string
	// SegmentSimilarity is the mean cosine of each segment's negatives to their ground truth (mgt only).
	SegmentSimilarity []float64
	// PoolMiB is the pool's embeddings alone, responses × dim × 4 bytes; NegativeMiB the negatives,
	// examples × L × (k−1) × 4 bytes (0 with uniform negatives, which have no segments).
	PoolMiB, NegativeMiB float64
}

// Report says what building the data cost (objectives.Reporter), a Report.
func (d *mgtData) Report() any {
	r := d.report
	r.PoolMiB = float64(r.Pool*r.Dim*4) / (1 << 20)
	r.NegativeMiB = float64(r.Examples*len(r.SegmentSimilarity)*int(max(d.k-1, 0))*4) / (1 << 20)
	return r
}

func buildMGTData(env objectives.DataEnv, o Config) (*mgtData, Report, error) {
	var rep Report
	log := env.Logger()
	tok := env.Tok
	start := time.Now()
	ds, err := env.ReadDialogues()
	if err != nil {
		return nil, rep, err
	}
	sep, _ := tok.SpecialToken("sep_token")
	ex := buckets.BuildExamples(ds, buckets.ExampleOptions{SystemOnly: o.Responses == "system", MaxContext: o.MaxContext, MinWords: o.MinWords, Sep: datasets.SepFor(sep)})
	if env.MaxExamples > 0 && len(ex.GT) > env.MaxExamples {
		// A random subset fixed by bucket_seed (not the run's seed), so every member of an ensemble trains
		// on the same examples; R shrinks to their responses.
		ex = ex.Subset(datasets.Order(len(ex.GT), o.BucketSeed, 0)[:env.MaxExamples])
	}
	rep.Examples, rep.Pool, rep.ReadS = len(ex.GT), len(ex.Pool), time.Since(start).Seconds()
	if len(ex.Pool) < o.Candidates {
		return nil, rep, fmt.Errorf("mgt data: %d distinct responses cannot fill %d candidates", len(ex.Pool), o.Candidates)
	}
	log.Info("mgt examples", zap.Int("dialogues", len(ds)), zap.Int("examples", len(ex.GT)), zap.Int("responses", len(ex.Pool)))

	start = time.Now()
	// Contexts keep their latest turns (the paper keeps a context's last words, §4.2.2); responses their start.
	contexts, err := tokenizeTexts(tok, ex.Contexts, env.MaxLength, tokenizers.TruncateLeft)
	if err != nil {
		return nil, rep, fmt.Errorf("mgt data: contexts: %w", err)
	}
	pool, err := tokenizeTexts(tok, ex.Pool, env.MaxLength, tokenizers.TruncateRight)
	if err != nil {
		return nil, rep, fmt.Errorf("mgt data: responses: %w", err)
	}
	rep.TokenizeS = time.Since(start).Seconds()

	d := &mgtData{contexts: contexts, pool: pool, gt: ex.GT, k: int64(o.Candidates), pad: tok.PadID(), segment: 1}
	gtKey := buckets.DataKey("ground truths", nil, [][]int32{ex.GT})
	if o.Variant != VariantMGT {
		// Eq. 8: uniform negatives, drawn in a moment, so not cached.
		d.negs, err = buckets.Uniform(len(pool), ex.GT, o.Candidates-1, o.BucketSeed, o.Stream())
		d.report = rep
		return d, rep, err
	}
	d.segment = o.Segment
	frozen, pooling, err := frozenEncoder(env, o)
	if err != nil {
		return nil, rep, err
	}
	// The segments' identity is the encoder's: a digest of its weights keys the embeddings, and through them
	// the negatives, so another (or a retrained) segment encoder embeds and segments afresh.
	modelKey, err := buckets.ModelKey(frozen)
	if err != nil {
		return nil, rep, err
	}
	rep.SegmentEncoder, rep.SegmentEncoderDigest = o.SegmentEncoder, fmt.Sprintf("%x", modelKey[:12])
	embKey := buckets.DataKey("mgt pool embeddings", []string{fmt.Sprintf("%x", modelKey), string(pooling)}, pool)
	start = time.Now()
	vecs, dim, hit, err := buckets.CachedEmbeddings(env.CacheDir, embKey, func() ([]float32, int, error) {
		log.Info("embedding the response pool with the frozen encoder", zap.Int("responses", len(pool)))
		v, err := buckets.EmbedTokens(frozen, pool, tok.PadID(), pooling, o.EmbedBatch, nil)
		return v, int(frozen.Config.HiddenSize), err
	}, log)
	if err != nil {
		return nil, rep, fmt.Errorf("mgt data: %w", err)
	}
	rep.EmbedS, rep.EmbedHit, rep.Dim = time.Since(start).Seconds(), hit, dim
	p, err := buckets.NewPool(vecs, dim)
	if err != nil {
		return nil, rep, fmt.Errorf("mgt data: %w", err)
	}
	bopt := buckets.Options{Segments: o.Models, Negatives: o.Candidates - 1, Sample: o.BucketSample, Seed: o.BucketSeed, Workers: o.BucketWorkers}
	if o.NearDuplicateCosine > 0 {
		bopt.Ceiling, bopt.Twins = float32(o.NearDuplicateCosine), buckets.NormalisedTwins(ex.Pool)
		bopt.CentredCeiling = o.NearDuplicateCentred
	}
	negKey := buckets.DataKey("mgt negatives", []string{fmt.Sprintf("%x %x %s", embKey, gtKey, bopt.Key())}, nil)
	start = time.Now()
	d.negs, rep.NegHit, err = buckets.CachedNegatives(env.CacheDir, negKey, func() (*buckets.Negatives, error) {
		log.Info("building the segments", zap.Int("examples", len(ex.GT)), zap.Int("segments", o.Models), zap.Int("sample", o.BucketSample))
		n, err := buckets.Build(p, ex.GT, bopt)
		if err == nil && o.NearDuplicateCosine > 0 {
			log.Info("near-duplicates of the ground truth left out of its segments", zap.Float64("cosine_at_least", o.NearDuplicateCosine),
				zap.Bool("centred", o.NearDuplicateCentred), zap.Int64("left_out", n.Excluded), zap.Float64("per_example", float64(n.Excluded)/float64(max(len(ex.GT), 1))),
				zap.Int64("examples_fallen_back", n.FellBack))
			if n.FellBack > 0 {
				log.Warn("a near-duplicate criterion would have left fewer responses than segments, and was not applied",
					zap.Int64("examples", n.FellBack), zap.Int("of", len(ex.GT)), zap.Float64("cosine_at_least", o.NearDuplicateCosine))
			}
		}
		return n, err
	}, log)
	if err != nil {
		return nil, rep, fmt.Errorf("mgt data: %w", err)
	}
	rep.BucketS = time.Since(start).Seconds()
	rep.SegmentSimilarity = buckets.SegmentSimilarity(p, ex.GT, d.negs)
	log.Info("mgt segments ready", zap.Float64s("mean_cosine_by_segment", rep.SegmentSimilarity), zap.Bool("embeddings_cached", hit),
		zap.Bool("negatives_cached", rep.NegHit))
	d.report = rep
	return d, rep, nil
}

// frozenEncoder is the encoder whose embeddings order the pool, and the pooling it embeds with: the response
// encoder of the trained single dual encoder named by segment_encoder (MGT §3.3, §4.2.3), pooled as that run
// declares; or, without segment_encoder, the experiment's backbone as a run starts with it, its random parts
// seeded with bucket_seed (not the paper's protocol: a fallback for tests and quick runs).
func frozenEncoder(env objectives.DataEnv, o Config) (*models.Model, models.Pooling, error) {
	log := env.Logger()
	if o.SegmentEncoder != "" {
		dir := o.SegmentEncoder
		if err := checkSegmentRun(dir); err != nil {
			return nil, "", err
		}
		m, ckpt, err := LoadResponseEncoder(dir, env.Device)
		if err != nil {
			return nil, "", fmt.Errorf("objective.segment_encoder = %q: %w", dir, err)
		}
		if env.Tok != nil && m.Config.VocabSize < int64(env.Tok.VocabSize()) {
			return nil, "", fmt.Errorf("objective.segment_encoder = %q: its vocabulary of %d tokens is smaller than this experiment's tokenizer's %d: train the single dual encoder on this experiment's backbone",
				dir, m.Config.VocabSize, env.Tok.VocabSize())
		}
		pooling := o.Pooling
		if l, err := sbert.Read(rundir.At(dir).ModelDir()); err == nil {
			pooling = l.Pooling // as the single dual encoder was trained to score
		}
		log.Info("segment encoder: the response encoder of the trained single dual encoder (MGT §3.3)",
			zap.String("run", dir), zap.String("checkpoint", ckpt), zap.String("pooling", string(pooling)))
		return m, pooling, nil
	}
	log.Warn("objective.segment_encoder is not set: the response pool is ordered by the untrained backbone, not by the trained single dual encoder's response encoder as MGT §3.3 does")
	if env.Encoder == nil {
		return nil, "", fmt.Errorf("mgt frozen encoder: the run offers no second encoder; set objective.segment_encoder to a trained single dual encoder's run folder")
	}
	m, err := env.Encoder(o.BucketSeed)
	if err != nil {
		return nil, "", fmt.Errorf("mgt frozen encoder: %w", err)
	}
	return m, o.Pooling, nil
}

// checkSegmentRun fails with what to do when dir is not a finished run: the single dual encoder is trained
// first. It names the experiment files under experiments/ that train into dir, when there are any.
func checkSegmentRun(dir string) error {
	cfg := filepath.Join(rundir.At(dir).ModelDir(), "config.json")
	_, err := os.Stat(cfg)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objective.segment_encoder = %q: %w", dir, err)
	}
	how := "train the single dual encoder (an experiment with objective.variant = \"single\") with output_dir = " + strconv.Quote(dir)
	if files := experimentsInto(dir); len(files) > 0 {
		how = "train it first: convrep train " + strings.Join(files, " (or ") + strings.Repeat(")", len(files)-1)
	}
	return fmt.Errorf("objective.segment_encoder = %q: no trained single dual encoder there yet (%s does not exist; a run writes it when it finishes). "+
		"MGT orders the response pool with that run's response encoder (§3.3): %s; scripts/mgt.sh runs both in order", dir, cfg, how)
}

// experimentsInto lists the experiment files under experiments/ (beside the working directory) whose
// output_dir is dir.
func experimentsInto(dir string) []string {
	paths, _ := filepath.Glob(filepath.Join("experiments", "*.toml"))
	want, _ := filepath.Abs(dir)
	var out []string
	for _, p := range paths {
		var head struct {
			OutputDir string `toml:"output_dir"`
		}
		if _, err := toml.DecodeFile(p, &head); err != nil || head.OutputDir == "" {
			continue
		}
		o := head.OutputDir
		if !filepath.IsAbs(o) {
			o = filepath.Join(filepath.Dir(p), o) // an experiment's paths are read from its folder
		}
		if a, err := filepath.Abs(o); err == nil && a == want {
			out = append(out, p)
		}
	}
	return out
}

// tokenizeTexts encodes each text with special tokens, truncated to maxLength on side trunc.
func tokenizeTexts(tok *tokenizers.Tokenizer, texts []string, maxLength int, trunc tokenizers.Truncation) ([][]int32, error) {
	pairs := make([]datasets.Pair, len(texts))
	for i, s := range texts {
		pairs[i] = datasets.Pair{Query: s, Response: "."}
	}
	tp, err := datasets.TokenizePairs(pairs, tok, maxLength, trunc, runtime.NumCPU())
	if err != nil {
		return nil, err
	}
	return tp.Query, nil
}

func (d *mgtData) Len() int { return len(d.gt) }

// Batch lays out the examples at idx as a Batch: context rows, and k candidate rows per
// example, its ground truth first, then its negatives of the run's segment.
func (d *mgtData) Batch(idx []int, dev gotch.Device) (objectives.Batch, error) {
	ctx := make([][]int32, len(idx))
	cands := make([][]int32, 0, len(idx)*int(d.k))
	for i, e := range idx {
		ctx[i] = d.contexts[e]
		cands = append(cands, d.pool[d.gt[e]])
		for _, n := range d.negs.Of(e, d.segment) {
			cands = append(cands, d.pool[n])
		}
	}
	c, err := models.BatchInput(inputs.Padded(ctx, d.pad), dev)
	if err != nil {
		return objectives.Batch{}, err
	}
	r, err := models.BatchInput(inputs.Padded(cands, d.pad), dev)
	if err != nil {
		c.Drop()
		return objectives.Batch{}, err
	}
	return objectives.Batch{Value: Batch{Context: c, Candidates: r, K: d.k}, Drop: func() { c.Drop(); r.Drop() }}, nil
}
