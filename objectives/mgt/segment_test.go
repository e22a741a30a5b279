package mgt_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
	"go.uber.org/zap/zaptest"

	"convrep/internal/shared"
	"convrep/internal/torch"
	"convrep/objectives"
	"convrep/objectives/mgt"
	"convrep/objectives/mgt/buckets"
	"convrep/objectives/mgt/mgttest"
	"convrep/safetensors"
	"convrep/tokenizers"
)

// MGT §3.3: the segments come from the response encoder of the trained run segment_encoder names. Three runs:
// A and B share a context encoder but not a response encoder, A and C the other way round. A and B must
// give different segments under different cache keys; C must give A's segments, read back from A's cache (the
// key is the response encoder's weights, not the context encoder's); the digest reported is that of A's
// response encoder. A run that does not exist yet is refused, saying what to train.
func TestSegmentsComeFromTheNamedResponseEncoder(t *testing.T) {
	tokDir := shared.MustPath(t, "data", "vocab", "bert-base-uncased")
	tok, err := tokenizers.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	vocab := int64(tok.VocabSize())
	root := t.TempDir()
	ctx1, ctx2 := mgttest.Encoder(t, vocab, 1), mgttest.Encoder(t, vocab, 2)
	resp1, resp2 := mgttest.Encoder(t, vocab, 3), mgttest.Encoder(t, vocab, 4)
	runA := mgttest.Run(t, filepath.Join(root, "a"), tok, ctx1, resp1)
	runB := mgttest.Run(t, filepath.Join(root, "b"), tok, ctx1, resp2)
	runC := mgttest.Run(t, filepath.Join(root, "c"), tok, ctx2, resp1)
	env := objectives.DataEnv{Root: shared.MustPath(t, "data", "pretrain"), Corpora: []string{"woz2"}, MaxExamples: 120,
		Tok: tok, TokDir: tokDir, MaxLength: 24, CacheDir: filepath.Join(root, "cache"), Device: gotch.CPU, Log: zaptest.NewLogger(t)}
	type built struct {
		report mgt.Report
		negs   []int32
	}
	build := func(run string) (built, error) {
		o, err := mgt.Parse(objectives.Settings{"variant": "mgt", "segment": int64(1), "models": int64(3), "candidates": int64(3),
			"max_context_turns": int64(1), "bucket_sample": int64(30), "segment_encoder": run})
		if err != nil {
			t.Fatal(err)
		}
		r, negs, err := mgt.BuildData(env, o)
		return built{r, negs}, err
	}
	a, err := build(runA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := build(runB)
	if err != nil {
		t.Fatal(err)
	}
	c, err := build(runC)
	if err != nil {
		t.Fatal(err)
	}
	want, err := buckets.ModelKey(resp1)
	if err != nil {
		t.Fatal(err)
	}
	ra, rb, rc := a.report, b.report, c.report
	t.Logf("A %s %v, B %s %v, C %s hits %v/%v", ra.SegmentEncoderDigest, ra.SegmentSimilarity, rb.SegmentEncoderDigest, rb.SegmentSimilarity,
		rc.SegmentEncoderDigest, rc.EmbedHit, rc.NegHit)
	switch {
	case ra.SegmentEncoder != runA:
		t.Errorf("report names segment encoder %q, want %q", ra.SegmentEncoder, runA)
	case ra.SegmentEncoderDigest == rb.SegmentEncoderDigest:
		t.Errorf("runs with different response encoders share the cache key %s", ra.SegmentEncoderDigest)
	case ra.SegmentEncoderDigest != hex12(want):
		t.Errorf("digest %s is not that of run A's response encoder (%s)", ra.SegmentEncoderDigest, hex12(want))
	case ra.EmbedHit || ra.NegHit || rb.EmbedHit || rb.NegHit:
		t.Errorf("A or B read a cache: %+v %+v", ra, rb)
	case slices.Equal(a.negs, b.negs):
		t.Error("different response encoders gave the same segments")
	case !rc.EmbedHit || !rc.NegHit || rc.SegmentEncoderDigest != ra.SegmentEncoderDigest:
		t.Errorf("run C (A's response encoder, another context encoder) did not reuse A's cache: %+v", rc)
	case !slices.Equal(a.negs, c.negs):
		t.Error("the same response encoder gave other segments")
	}

	_, err = build(filepath.Join(root, "not-trained"))
	if err == nil || !strings.Contains(err.Error(), "segment_encoder") || !strings.Contains(err.Error(), "does not exist") ||
		!strings.Contains(err.Error(), "train") {
		t.Fatalf("a missing segment encoder gave error %v, want one naming segment_encoder and what to train", err)
	}
	// A run of another objective (no response encoder in its checkpoint) is refused.
	plain := filepath.Join(root, "plain")
	if err := ctx1.Save(filepath.Join(plain, "model")); err != nil {
		t.Fatal(err)
	}
	var some *ts.Tensor
	for _, p := range ctx1.Params() {
		some = p
		break
	}
	st, err := torch.ToSafetensor("param/x", some)
	if err == nil {
		err = os.MkdirAll(filepath.Join(plain, "checkpoints"), 0o755)
	}
	if err == nil {
		err = safetensors.WriteFile(filepath.Join(plain, "checkpoints", "step-000000001.safetensors"), nil, []safetensors.Tensor{st})
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := build(plain); err == nil || !strings.Contains(err.Error(), "no MGT response encoder") {
		t.Fatalf("a run without a response encoder gave error %v", err)
	}
}

func hex12(k buckets.Key) string { return fmt.Sprintf("%x", k[:12]) }

// mgttest writes checkpoints under the prefix this package reads the response encoder from.
func TestMgttestWritesTheTrainersLayout(t *testing.T) {
	if mgttest.ResponseTensors != mgt.ResponseTensors {
		t.Errorf("mgttest.ResponseTensors = %q, want %q", mgttest.ResponseTensors, mgt.ResponseTensors)
	}
}
