package mgt

import (
	"fmt"
	"strings"

	"convrep/models"
	"convrep/objectives"
)

// MGT variants: the three rows of the paper's Table 2.
const (
	// VariantMGT trains member `segment` of L: its negatives come from segment l of the candidate responses
	// ordered by cosine similarity to the ground truth (§3.3, Eq. 8-12).
	VariantMGT = "mgt"
	// VariantEnsemble trains member `member` of a plain ensemble: uniformly sampled negatives (Eq. 8), a
	// stream of its own per member (§3.2).
	VariantEnsemble = "ensemble"
	// VariantSingle is the single dual encoder with uniformly sampled negatives (§3.1).
	VariantSingle = "single"
)

// Config are the [objective] settings of "mgt", read once by Parse.
type Config struct {
	Variant    string         // mgt, ensemble or single
	Candidates int            // k: the ground truth and k−1 negatives per context (Eq. 6; 20 on MultiWOZ, §4.1.1)
	Models     int            // L (§4.2: 5)
	Segment    int            // 1..L, the member an mgt run trains (1 = the closest negatives)
	Member     int            // 1..L, the member an ensemble run trains
	Pooling    models.Pooling // how an encoder's token states become c and r_i (mean or cls)
	Responses  string         // which turns are responses: "system" (MultiWOZ's retrieval task) or "all"
	MaxContext int            // previous turns kept in a context; 0 keeps them all
	MinWords   int            // responses of at most this many words are dropped (0 drops only empty ones)

	// SegmentEncoder is the run folder of the trained single dual encoder whose response encoder embeds the
	// response pool for the segments (mgt only; §3.3, §4.2.3: "the response encoder of the baseline dual
	// encoder"). "" = the experiment's backbone as initialised (random ones with BucketSeed), which is not the
	// paper's protocol and is logged as such.
	SegmentEncoder string
	BucketSeed     int64 // libtorch seed of a random frozen encoder, and of the bucket draws
	BucketSample   int   // responses sampled per example to place the L−1 segment boundaries
	EmbedBatch     int   // responses per forward pass when embedding the pool
	BucketWorkers  int   // goroutines building the buckets; 0 = GOMAXPROCS
	// NearDuplicateCosine, when above 0, leaves the ground truth's near-duplicates out of its segments (mgt
	// only; not in the paper, whose pool R excludes the ground truth's own text only): responses whose cosine
	// with it under the segment encoder is at least this, and responses whose normalised text is its
	// (buckets.NormalisedTwins). 0, the default, is the paper's.
	NearDuplicateCosine float64
	// NearDuplicateCentred measures that cosine on centred embeddings (buckets.Centred): for a segment encoder
	// whose raw cosines all lie near 1, where no fixed ceiling separates paraphrases from the rest.
	NearDuplicateCentred bool
}

// Parse reads the [objective] table of "mgt" strictly (an unknown key is an error).
func Parse(s objectives.Settings) (Config, error) {
	r := s.Reader()
	o := Config{
		Variant:              strings.ToLower(r.Text("variant", VariantMGT)),
		Candidates:           int(r.Integer("candidates", 20)),
		Models:               int(r.Integer("models", 5)),
		Segment:              int(r.Integer("segment", 0)),
		Member:               int(r.Integer("member", 0)),
		Pooling:              models.Pooling(r.Text("pooling", string(models.Mean))),
		Responses:            r.Text("responses", "system"),
		MaxContext:           int(r.Integer("max_context_turns", 0)),
		MinWords:             int(r.Integer("min_words", 0)),
		SegmentEncoder:       r.Text("segment_encoder", ""),
		BucketSeed:           r.Integer("bucket_seed", 1234),
		BucketSample:         int(r.Integer("bucket_sample", 2000)),
		EmbedBatch:           int(r.Integer("embed_batch", 256)),
		BucketWorkers:        int(r.Integer("bucket_workers", 0)),
		NearDuplicateCosine:  r.Number("near_duplicate_cosine", 0),
		NearDuplicateCentred: r.Bool("near_duplicate_centred", false),
	}
	if err := r.Done(); err != nil {
		return o, err
	}
	return o, o.validate()
}

func (o *Config) validate() error {
	if _, err := models.ParsePooling(string(o.Pooling)); err != nil {
		return fmt.Errorf("setting pooling: %w", err)
	}
	switch {
	case o.Candidates < 2:
		return fmt.Errorf("setting candidates = %d: need the ground truth and at least one negative", o.Candidates)
	case o.Models < 1:
		return fmt.Errorf("setting models = %d: must be positive", o.Models)
	case o.Responses != "system" && o.Responses != "all":
		return fmt.Errorf("setting responses = %q: want system or all", o.Responses)
	case o.MaxContext < 0 || o.MinWords < 0 || o.BucketWorkers < 0:
		return fmt.Errorf("settings max_context_turns, min_words and bucket_workers must not be negative")
	case o.EmbedBatch < 1:
		return fmt.Errorf("setting embed_batch = %d: must be positive", o.EmbedBatch)
	}
	if !(o.NearDuplicateCosine >= 0 && o.NearDuplicateCosine <= 1) {
		return fmt.Errorf("setting near_duplicate_cosine = %v: a cosine in [0, 1] (0: keep near-duplicates, the paper's)", o.NearDuplicateCosine)
	}
	if o.NearDuplicateCentred && o.NearDuplicateCosine == 0 {
		return fmt.Errorf("setting near_duplicate_centred needs near_duplicate_cosine, the ceiling it measures")
	}
	if o.NearDuplicateCosine > 0 && o.Variant != VariantMGT {
		return fmt.Errorf("setting near_duplicate_cosine belongs to the mgt variant (variant = %q draws its negatives uniformly)", o.Variant)
	}
	if o.SegmentEncoder != "" && o.Variant != VariantMGT {
		return fmt.Errorf("setting segment_encoder belongs to the mgt variant (variant = %q draws its negatives uniformly)", o.Variant)
	}
	switch o.Variant {
	case VariantMGT:
		if o.Segment < 1 || o.Segment > o.Models {
			return fmt.Errorf("setting segment = %d: the mgt variant trains one of segments 1..%d (models); run it once per segment", o.Segment, o.Models)
		}
		if o.Member != 0 {
			return fmt.Errorf("setting member belongs to the ensemble variant; mgt members are chosen with segment")
		}
		if o.BucketSample < o.Models*(o.Candidates-1) {
			return fmt.Errorf("setting bucket_sample = %d: fewer than models×(candidates−1) = %d, a segment could not give distinct negatives",
				o.BucketSample, o.Models*(o.Candidates-1))
		}
	case VariantEnsemble:
		if o.Member < 1 || o.Member > o.Models {
			return fmt.Errorf("setting member = %d: the ensemble variant trains one of members 1..%d (models)", o.Member, o.Models)
		}
		if o.Segment != 0 {
			return fmt.Errorf("setting segment belongs to the mgt variant")
		}
	case VariantSingle:
		if o.Segment != 0 || o.Member != 0 {
			return fmt.Errorf("settings segment and member do not apply to the single dual encoder")
		}
	default:
		return fmt.Errorf("setting variant = %q: want mgt, ensemble or single", o.Variant)
	}
	return nil
}

// Stream is the index of the member's negative draws: the segment, the ensemble member, or 1.
func (o Config) Stream() int {
	switch o.Variant {
	case VariantMGT:
		return o.Segment
	case VariantEnsemble:
		return o.Member
	}
	return 1
}
