package models

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"convrep/internal/shared"
	"convrep/safetensors"
)

// familyNames are the names the family gives the embeddings, layer 0 and the heads h: every parameter,
// and the position_ids buffer where the family saves it.
func familyNames(f Family, h Heads) []string {
	var names []string
	add := func(prefix string, parts ...string) {
		for _, p := range parts {
			names = append(names, prefix+p)
		}
	}
	add(f.EmbeddingsPrefix(), "word_embeddings.weight", "position_embeddings.weight", "LayerNorm.weight", "LayerNorm.bias")
	if f.tokenTypes {
		add(f.EmbeddingsPrefix(), "token_type_embeddings.weight")
	}
	if f.savesPositionIDs {
		add(f.EmbeddingsPrefix(), "position_ids")
	}
	b := f.block
	for _, part := range []string{b.query, b.key, b.value, b.attnOut, b.attnNorm, b.ffnIn, b.ffnOut, b.outNorm} {
		add(f.LayerPrefix(0)+part, ".weight", ".bias")
	}
	if h.Pooler {
		add(f.poolerPrefix(), "dense.weight", "dense.bias")
	}
	if h.MLM {
		add(f.mlm.dense, ".weight", ".bias")
		add(f.mlm.norm, ".weight", ".bias")
		add(f.mlm.bias, "")
	}
	if h.NSP {
		add(f.nsp, ".weight", ".bias")
	}
	return names
}

// Each family's table against the fixture checkpoints HuggingFace wrote: the names it gives the embeddings,
// layer 0 and the heads are exactly the checkpoint's (leaving out the other layers), each head's names
// start with the prefix Load groups it by, and the keys pytorch_model.bin holds beside model.safetensors'
// are the family's tied aliases of tensors the checkpoint has.
func TestFamilyNamesMatchCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		arch    Arch
		heads   Heads // the heads the fixture's checkpoint has (BertForPreTraining, RobertaForMaskedLM, DistilBertForMaskedLM)
	}{
		{"tiny-bert", BERT, Heads{Pooler: true, MLM: true, NSP: true}},
		{"tiny-roberta", RoBERTa, Heads{MLM: true}},
		{"tiny-distilbert", DistilBERT, Heads{MLM: true}},
	} {
		t.Run(string(tc.arch), func(t *testing.T) {
			dir := shared.MustPath(t, "fixtures", tc.fixture)
			cfg, err := ReadConfig(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			f := cfg.Family()
			if f.Arch != tc.arch {
				t.Fatalf("%s's config has family %q, want %q", tc.fixture, f.Arch, tc.arch)
			}
			st, err := safetensors.ReadFile(filepath.Join(dir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, x := range st.Tensors {
				keys = append(keys, x.Name)
			}
			var inTable []string // the checkpoint's keys but those of layers 1 and up
			for _, k := range keys {
				if !laterLayer(f, k, int(cfg.NumLayers)) {
					inTable = append(inTable, k)
				}
			}
			want := familyNames(f, tc.heads)
			slices.Sort(want)
			slices.Sort(inTable)
			for _, n := range want {
				if !slices.Contains(inTable, n) {
					t.Errorf("the family names %s, which %s/model.safetensors lacks", n, tc.fixture)
				}
			}
			for _, k := range inTable {
				if !slices.Contains(want, k) {
					t.Errorf("%s/model.safetensors holds %s, which the family does not name", tc.fixture, k)
				}
			}

			for _, n := range []string{f.mlm.dense, f.mlm.norm, f.mlm.bias, f.mlm.decoder, f.mlm.decoderBias} {
				if n != "" && !strings.HasPrefix(n, f.mlm.prefix) {
					t.Errorf("MLM head name %s does not start with the head's prefix %s", n, f.mlm.prefix)
				}
			}

			bin, err := readStateDict(filepath.Join(dir, "pytorch_model.bin"))
			if err != nil {
				t.Fatal(err)
			}
			for k := range bin {
				if slices.Contains(keys, k) {
					continue
				}
				target, ok := f.aliasOf(k, cfg.TieWordEmbeddings)
				if !ok {
					t.Errorf("%s/pytorch_model.bin holds %s, neither in model.safetensors nor an alias the family knows", tc.fixture, k)
				} else if !slices.Contains(keys, target) {
					t.Errorf("%s is an alias of %s, which the checkpoint lacks", k, target)
				}
			}
		})
	}
}

// laterLayer reports whether key belongs to encoder layer 1 or later.
func laterLayer(f Family, key string, layers int) bool {
	for i := 1; i < layers; i++ {
		if strings.HasPrefix(key, f.LayerPrefix(i)) {
			return true
		}
	}
	return false
}

// A random config takes its family's released defaults, and a family whose positions start after the pad
// id gets pad+1 more position rows, so that the longest input is still the one asked for.
func TestNewConfigFamilyDefaults(t *testing.T) {
	s := Sizes{VocabSize: 50, HiddenSize: 8, NumLayers: 1, NumHeads: 2, IntermediateSize: 16, MaxSequence: 32, PadTokenID: 1}
	for _, tc := range []struct {
		arch      Arch
		types     int64
		eps       float64
		positions int64
	}{
		{BERT, 2, 1e-12, 32},
		{RoBERTa, 1, 1e-5, 34},
		{DistilBERT, 0, 1e-12, 32},
	} {
		c, err := NewConfig(tc.arch, s)
		if err != nil {
			t.Fatal(err)
		}
		if c.TypeVocabSize != tc.types || c.LayerNormEps != tc.eps || c.MaxPositions != tc.positions || c.MaxSequence() != 32 ||
			c.InitializerRange != 0.02 || c.HiddenAct != "gelu" || !c.TieWordEmbeddings {
			t.Errorf("%s: %+v", tc.arch, c)
		}
	}
	if _, err := NewConfig("gpt2", s); err == nil || !strings.Contains(err.Error(), `"gpt2"`) {
		t.Errorf("an unknown family gave error %v", err)
	}
	if got := Archs(); !slices.Equal(got, []Arch{BERT, RoBERTa, DistilBERT}) {
		t.Errorf("Archs() = %v", got)
	}
}
