package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"convrep/internal/shared"
	"convrep/models"
	"convrep/models/sbert"
)

// The single-text rows of each fixture batch, embedded by the command, give HuggingFace's mean-pooled vectors.
func TestEmbedGivesHuggingFaceVectors(t *testing.T) {
	for _, model := range []string{"tiny-bert", "tiny-roberta", "tiny-distilbert"} {
		t.Run(model, func(t *testing.T) {
			dir := shared.MustPath(t, "fixtures", model)
			var exp struct {
				Rows []struct {
					Text     string  `json:"text"`
					TextPair *string `json:"text_pair"`
				} `json:"rows"`
				MeanPooled [][]float64 `json:"mean_pooled"`
			}
			b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &exp); err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			in, out := filepath.Join(tmp, "texts.jsonl"), filepath.Join(tmp, "out", "emb.jsonl")
			var lines []string
			var want [][]float64
			for i, r := range exp.Rows {
				if r.TextPair == nil {
					line, _ := json.Marshal(map[string]string{"text": r.Text, "id": "x"})
					lines = append(lines, string(line))
					want = append(want, exp.MeanPooled[i])
				}
			}
			if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			o := options{model: dir, pooling: "mean", input: in, output: out, device: "cpu", truncation: "right", batchSize: 1}
			if err := run(context.Background(), o, zap.NewNop()); err != nil {
				t.Fatal(err)
			}
			got := readOutput(t, out)
			if len(got) != len(want) {
				t.Fatalf("%d embeddings for %d texts", len(got), len(want))
			}
			for i := range want {
				if got[i].Text != exp.Rows[i].Text {
					t.Errorf("row %d: text %q, want %q (order must be kept)", i, got[i].Text, exp.Rows[i].Text)
				}
				for j := range want[i] {
					if d := math.Abs(float64(got[i].Embedding[j]) - want[i][j]); d > 1e-4 {
						t.Fatalf("row %d dim %d: %g, HuggingFace %g", i, j, got[i].Embedding[j], want[i][j])
					}
				}
			}
		})
	}
}

func readOutput(t *testing.T, path string) []record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	return recs
}

func TestEmbedRejectsBadInput(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	model := shared.MustPath(t, "fixtures", "tiny-bert")
	for _, tc := range []struct {
		name string
		o    options
		want string
	}{
		{"broken json line", options{input: write("a.jsonl", "{\"text\": \"ok\"}\n{\"text\": \n")}, "a.jsonl:2: not a JSON object"},
		{"no text field", options{input: write("b.jsonl", "{\"utterance\": \"hi\"}\n")}, "b.jsonl:1: no \"text\" field"},
		{"missing input", options{input: filepath.Join(tmp, "none.txt")}, "none.txt"},
		{"bad pooling", options{input: write("c.txt", "hi\n"), pooling: "max"}, `pooling "max"`},
		{"bad device", options{input: write("d.txt", "hi\n"), device: "tpu"}, `device "tpu"`},
		{"no model", options{input: write("e.txt", "hi\n"), model: filepath.Join(tmp, "nowhere")}, "nowhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options{model: model, pooling: "mean", output: filepath.Join(tmp, "out.jsonl"), device: "cpu", truncation: "right", batchSize: 8}
			if tc.o.input != "" {
				o.input = tc.o.input
			}
			if tc.o.pooling != "" {
				o.pooling = tc.o.pooling
			}
			if tc.o.device != "" {
				o.device = tc.o.device
			}
			if tc.o.model != "" {
				o.model = tc.o.model
			}
			err := run(context.Background(), o, zap.NewNop())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
			if _, statErr := os.Stat(o.output); statErr == nil {
				t.Errorf("a failed run left %s behind", o.output)
			}
		})
	}
}

// A model folder that declares its pooling for sentence-transformers is embedded that way without
// --pooling: a folder declaring [CLS] and normalisation gives the unit [CLS] vectors that --pooling cls
// gives before normalising; an explicit --pooling wins over the folder.
func TestEmbedUsesTheFolderDeclaredPooling(t *testing.T) {
	src := shared.MustPath(t, "fixtures", "tiny-bert")
	dir := filepath.Join(t.TempDir(), "model")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	in := filepath.Join(tmp, "texts.txt")
	if err := os.WriteFile(in, []byte("book a table for two\nis it going to rain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	embed := func(pooling, name string) []record {
		t.Helper()
		out := filepath.Join(tmp, name)
		o := options{model: dir, pooling: pooling, input: in, output: out, device: "cpu", truncation: "right", batchSize: 2}
		if err := run(context.Background(), o, zap.NewNop()); err != nil {
			t.Fatal(err)
		}
		return readOutput(t, out)
	}
	cls := embed("cls", "cls.jsonl") // before the folder declares anything: raw [CLS] states
	if err := sbert.Write(dir, sbert.Layout{Pooling: models.CLS, Normalize: true, MaxSeqLength: 16, Dim: 32}); err != nil {
		t.Fatal(err)
	}
	declared := embed("", "declared.jsonl")
	mean := embed("mean", "mean.jsonl")
	for i := range cls {
		var norm float64
		for _, x := range cls[i].Embedding {
			norm += float64(x) * float64(x)
		}
		norm = math.Sqrt(norm)
		for j, x := range cls[i].Embedding {
			if d := math.Abs(float64(x)/norm - float64(declared[i].Embedding[j])); d > 1e-6 {
				t.Fatalf("text %d dim %d: declared embedding %v, want the unit [CLS] vector %v", i, j, declared[i].Embedding[j], float64(x)/norm)
			}
		}
		if math.Abs(float64(mean[i].Embedding[0])-float64(declared[i].Embedding[0])) < 1e-9 {
			t.Errorf("text %d: --pooling mean gave the declared [CLS] embedding", i)
		}
	}
}
