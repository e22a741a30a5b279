// Package mgttest builds, for tests, what a finished run of MGT's dual encoder leaves on disk: tiny seeded
// encoders, and a run folder whose model/ is the context encoder and whose checkpoints hold both encoders under
// the trainer's layout and MGT's own prefix. MGT's tests use it, and the evaluation's tests of the ensemble and
// of checkpoint selection.
package mgttest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/checkpoint"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/models/sbert"
	"convrep/objectives/mgt"
	"convrep/rundir"
	"convrep/safetensors"
	"convrep/tokenizers"
)

// ResponseTensors prefixes the response encoder's parameters in an MGT checkpoint: the checkpoint's parameter
// prefix, then the VarStore prefix mgt keeps them under. The context encoder's are under the parameter prefix
// alone, as every objective's encoder.
const ResponseTensors = checkpoint.ParamPrefix + mgt.ResponsePrefix + "."

// Encoder is a 2-layer BERT of width 16 over vocab tokens, initialised from libtorch seed.
func Encoder(t testing.TB, vocab int64, seed uint64) *models.Model {
	t.Helper()
	if err := torch.ManualSeed(seed); err != nil {
		t.Fatal(err)
	}
	c := &models.Config{Arch: models.BERT, VocabSize: vocab, HiddenSize: 16, NumLayers: 2, NumHeads: 2,
		IntermediateSize: 32, HiddenAct: "gelu", HiddenDropout: 0.1, AttentionDropout: 0.1, MaxPositions: 64,
		TypeVocabSize: 2, LayerNormEps: 1e-12, InitializerRange: 0.02, TieWordEmbeddings: true}
	m, err := models.New(c, models.Heads{}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// WriteCheckpoint writes an MGT checkpoint at path as the trainer does: the context encoder as param/<name>,
// the response encoder as param/mgt_response.<name>.
func WriteCheckpoint(t testing.TB, path string, context, response *models.Model) {
	t.Helper()
	var tensors []safetensors.Tensor
	for prefix, m := range map[string]*models.Model{checkpoint.ParamPrefix: context, ResponseTensors: response} {
		for name, p := range m.Params() {
			st, err := torch.ToSafetensor(prefix+name, p)
			if err != nil {
				t.Fatal(err)
			}
			tensors = append(tensors, st)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := safetensors.WriteFile(path, nil, tensors); err != nil {
		t.Fatal(err)
	}
}

// Run writes a finished run folder of objective mgt at dir as the trainer leaves one and returns dir: model/
// holds the context encoder, its tokenizer and its pooling (unnormalised mean); the final checkpoint,
// checkpoints/step-000000012.safetensors, holds both encoders (WriteCheckpoint).
func Run(t testing.TB, dir string, tok *tokenizers.Tokenizer, context, response *models.Model) string {
	t.Helper()
	run := rundir.At(dir)
	model := run.ModelDir()
	if err := context.Save(model); err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(model); err != nil {
		t.Fatal(err)
	}
	if err := sbert.Write(model, sbert.Layout{Pooling: models.Mean, Dim: context.Config.HiddenSize, MaxSeqLength: 32}); err != nil {
		t.Fatal(err)
	}
	WriteCheckpoint(t, run.CheckpointPath(12), context, response)
	return dir
}
