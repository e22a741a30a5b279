package models

import (
	"strings"
	"testing"
)

func TestParseConfigRejects(t *testing.T) {
	base := `"vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 64`
	for _, tc := range []struct{ name, json, want string }{
		{"not json", `{`, "not a JSON object"},
		{"unknown family", `{"model_type": "gpt2", ` + base + `}`, `model_type "gpt2"`},
		{"heads do not divide", `{"model_type": "bert", "vocab_size": 100, "hidden_size": 30, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 64}`, "not a multiple"},
		{"zero layers", `{"model_type": "bert", "vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 0, "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 64}`, "number of layers must be positive"},
		{"unknown activation", `{"model_type": "bert", "hidden_act": "mish", ` + base + `}`, `activation "mish"`},
		{"relative positions", `{"model_type": "bert", "position_embedding_type": "relative_key", ` + base + `}`, "relative_key"},
		{"wrong type", `{"model_type": "bert", "hidden_size": "32"}`, "hidden_size"},
		{"pad outside vocab", `{"model_type": "roberta", "pad_token_id": 100, ` + base + `}`, "pad_token_id 100"},
		{"dropout of one", `{"model_type": "bert", "hidden_dropout_prob": 1, ` + base + `}`, "dropout 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestParseConfigFamilies(t *testing.T) {
	for _, tc := range []struct {
		json                  string
		arch                  Arch
		hidden, layers, types int64
		eps                   float64
		act                   string
	}{
		{`{"model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 8, "hidden_act": "gelu_new"}`, BERT, 8, 1, 2, 1e-12, "gelu_new"},
		{`{"model_type": "roberta", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 8, "type_vocab_size": 1, "layer_norm_eps": 1e-5}`, RoBERTa, 8, 1, 1, 1e-5, "gelu"},
		{`{"model_type": "distilbert", "vocab_size": 10, "dim": 8, "n_layers": 3, "n_heads": 2, "hidden_dim": 16, "max_position_embeddings": 8, "activation": "relu"}`, DistilBERT, 8, 3, 0, 1e-12, "relu"},
	} {
		c, err := ParseConfig([]byte(tc.json))
		if err != nil {
			t.Fatal(err)
		}
		if c.Arch != tc.arch || c.HiddenSize != tc.hidden || c.NumLayers != tc.layers || c.TypeVocabSize != tc.types || c.LayerNormEps != tc.eps || c.HiddenAct != tc.act {
			t.Errorf("%s: parsed %+v", tc.arch, c)
		}
	}
}
