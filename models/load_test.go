package models

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"convrep/internal/shared"
	"convrep/safetensors"
)

// copyFixture makes a writable copy of a fixture model's config.json with the given tensors as its
// model.safetensors.
func copyFixture(t *testing.T, model string, edit func(map[string]safetensors.Tensor)) string {
	t.Helper()
	src := shared.MustPath(t, "fixtures", model)
	f, err := safetensors.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]safetensors.Tensor{}
	for _, x := range f.Tensors {
		byName[x.Name] = x
	}
	edit(byName)
	var list []safetensors.Tensor
	for _, x := range byName {
		list = append(list, x)
	}
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), nil, list); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadReportsEveryMismatchTogether(t *testing.T) {
	dir := copyFixture(t, "tiny-bert", func(sd map[string]safetensors.Tensor) {
		delete(sd, "bert.encoder.layer.1.output.dense.bias")
		x := sd["bert.pooler.dense.weight"]
		x.Shape = []int64{16, 64}
		sd["bert.pooler.dense.weight"] = x
		extra := sd["cls.predictions.bias"]
		extra.Name = "classifier.bias"
		sd["classifier.bias"] = extra
	})
	_, err := Load(dir, LoadOptions{Device: gotch.CPU})
	if err == nil {
		t.Fatal("a checkpoint with a missing, a mis-shaped and an unexpected tensor loaded")
	}
	for _, want := range []string{
		filepath.Join(dir, "model.safetensors"),
		"missing (1): bert.encoder.layer.1.output.dense.bias [32]",
		"mis-shaped (1): bert.pooler.dense.weight: checkpoint [16 64], model [32 32]",
		"unexpected (1): classifier.bias F32[30522]",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// An encoder-only checkpoint (BertModel's names, no prefix, no heads) loads into a model with an MLM head:
// the head is initialised and logged, and the encoder still gives HuggingFace's outputs.
func TestLoadEncoderOnlyCheckpointInitialisesHead(t *testing.T) {
	dir := copyFixture(t, "tiny-bert", func(sd map[string]safetensors.Tensor) {
		all := maps.Clone(sd)
		clear(sd)
		for k, x := range all {
			if rest, ok := strings.CutPrefix(k, "bert."); ok {
				x.Name = rest
				sd[rest] = x
			}
		}
	})
	core, logs := observer.New(zap.InfoLevel)
	m, err := Load(dir, LoadOptions{Heads: &Heads{Pooler: true, MLM: true}, Device: gotch.CPU, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	if logs.FilterMessage("checkpoint has no MLM head; initialised it").Len() != 1 {
		t.Errorf("initialising the MLM head was not logged; logs: %v", logs.All())
	}
	exp := readExpected(t, shared.MustPath(t, "fixtures", "tiny-bert", "expected.safetensors"))
	out, err := m.Forward(Input{IDs: exp.tensor(t, "input_ids"), Mask: exp.tensor(t, "attention_mask"),
		TypeIDs: exp.tensor(t, "token_type_ids")}, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := exp.maxDiff(t, "last_hidden_state", out.Last); d > parityTol {
		t.Errorf("encoder-only checkpoint: last hidden state differs by %g", d)
	}
	if _, err := m.MLMLogits(out.Last); err != nil {
		t.Errorf("initialised MLM head: %v", err)
	}
}

// Saving writes exactly the tensor names and shapes HuggingFace writes for the same model, and loading
// what was saved gives bit-identical outputs.
func TestSaveMatchesHuggingFaceLayoutAndRoundTrips(t *testing.T) {
	for _, model := range []string{"tiny-bert", "tiny-roberta", "tiny-distilbert"} {
		t.Run(model, func(t *testing.T) {
			src := shared.MustPath(t, "fixtures", model)
			m, err := Load(src, LoadOptions{Device: gotch.CPU})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := m.Save(dir); err != nil {
				t.Fatal(err)
			}
			if got, want := layout(t, filepath.Join(dir, "model.safetensors")), layout(t, filepath.Join(src, "model.safetensors")); got != want {
				t.Errorf("saved tensors differ from HuggingFace's:\n got  %s\n want %s", got, want)
			}
			back, err := Load(dir, LoadOptions{Device: gotch.CPU})
			if err != nil {
				t.Fatal(err)
			}
			exp := readExpected(t, filepath.Join(src, "expected.safetensors"))
			in := Input{IDs: exp.tensor(t, "input_ids"), Mask: exp.tensor(t, "attention_mask")}
			a, _ := m.Forward(in, false)
			b, err := back.Forward(in, false)
			if err != nil {
				t.Fatal(err)
			}
			if !a.Last.MustEqual(b.Last, false) {
				t.Error("the reloaded model's outputs are not bit-identical")
			}
			if _, err := ReadConfig(filepath.Join(dir, "config.json")); err != nil {
				t.Errorf("saved config: %v", err)
			}
		})
	}
}

// layout lists a safetensors file's names, dtypes and shapes.
func layout(t *testing.T, path string) string {
	t.Helper()
	_, infos, err := safetensors.ReadHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, x := range infos {
		parts = append(parts, fmt.Sprintf("%s %s%v", x.Name, x.DType, x.Shape))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// A dropout override replaces both of the checkpoint's rates, reaches every layer, and is what Save writes.
func TestLoadDropoutOverride(t *testing.T) {
	dir := shared.MustPath(t, "fixtures", "tiny-bert")
	for _, c := range []struct {
		p  float64
		ok bool
	}{{0.2, true}, {0, true}, {1, false}, {-0.1, false}} {
		p := c.p
		m, err := Load(dir, LoadOptions{Dropout: &p, Device: gotch.CPU})
		if !c.ok {
			if err == nil {
				t.Errorf("dropout %v was accepted", p)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.HiddenDropout != p || m.Config.AttentionDropout != p {
			t.Errorf("dropout %v: config has hidden %v, attention %v", p, m.Config.HiddenDropout, m.Config.AttentionDropout)
		}
		for i, l := range m.layers {
			if l.hiddenDrop != p || l.attnDrop != p {
				t.Errorf("dropout %v: layer %d uses %v and %v", p, i, l.hiddenDrop, l.attnDrop)
			}
		}
		out := t.TempDir()
		if err := m.Config.WriteConfig(out); err != nil {
			t.Fatal(err)
		}
		again, err := ReadConfig(filepath.Join(out, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if again.HiddenDropout != p {
			t.Errorf("saved config says %v, want %v", again.HiddenDropout, p)
		}
	}
}

// Two checkpoint keys for one tensor (a legacy gamma beside its weight, or a key with and without the family
// prefix) are refused, naming both, rather than one of them winning by map order.
func TestLoadRefusesTwoNamesForOneTensor(t *testing.T) {
	for _, tc := range []struct{ from, alias string }{
		{"bert.embeddings.LayerNorm.weight", "bert.embeddings.LayerNorm.gamma"},
		{"bert.pooler.dense.bias", "pooler.dense.bias"},
	} {
		dir := copyFixture(t, "tiny-bert", func(sd map[string]safetensors.Tensor) {
			x := sd[tc.from]
			x.Name = tc.alias
			sd[tc.alias] = x
		})
		_, err := Load(dir, LoadOptions{Device: gotch.CPU})
		if err == nil || !strings.Contains(err.Error(), tc.from) || !strings.Contains(err.Error(), tc.alias) || !strings.Contains(err.Error(), "both name") {
			t.Errorf("%s beside %s: %v", tc.alias, tc.from, err)
		}
	}
}
