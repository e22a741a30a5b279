package embedcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"convrep/internal/shared"
	"convrep/modelref"
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
			o := options{Encoding: modelref.Encoding{Model: dir, Pooling: "mean", Device: "cpu", Truncation: "right"}, input: in, output: out, batchSize: 1}
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
		{"bad pooling", options{Encoding: modelref.Encoding{Pooling: "max"}, input: write("c.txt", "hi\n")}, `pooling "max"`},
		{"bad device", options{Encoding: modelref.Encoding{Device: "tpu"}, input: write("d.txt", "hi\n")}, `device "tpu"`},
		{"no model", options{Encoding: modelref.Encoding{Model: filepath.Join(tmp, "nowhere")}, input: write("e.txt", "hi\n")}, "nowhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options{Encoding: modelref.Encoding{Model: model, Pooling: "mean", Device: "cpu", Truncation: "right"}, output: filepath.Join(tmp, "out.jsonl"), batchSize: 8}
			if tc.o.input != "" {
				o.input = tc.o.input
			}
			if tc.o.Pooling != "" {
				o.Pooling = tc.o.Pooling
			}
			if tc.o.Device != "" {
				o.Device = tc.o.Device
			}
			if tc.o.Model != "" {
				o.Model = tc.o.Model
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
// tinyModelCopy copies the tiny BERT fixture into a folder the test may add sentence-transformers files to.
func tinyModelCopy(t *testing.T) string {
	t.Helper()
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
	return dir
}

// embedder embeds texts with the model at dir, each call with a pooling flag and a --max-length.
func embedder(t *testing.T, dir string, texts string) func(pooling string, maxLength int) []record {
	tmp := t.TempDir()
	in := filepath.Join(tmp, "texts.txt")
	if err := os.WriteFile(in, []byte(texts), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := 0
	return func(pooling string, maxLength int) []record {
		t.Helper()
		calls++
		out := filepath.Join(tmp, fmt.Sprintf("out-%d.jsonl", calls))
		o := options{Encoding: modelref.Encoding{Model: dir, Pooling: pooling, MaxLength: maxLength, Device: "cpu", Truncation: "right"}, input: in, output: out, batchSize: 2}
		if err := run(context.Background(), o, zap.NewNop()); err != nil {
			t.Fatal(err)
		}
		return readOutput(t, out)
	}
}

func TestEmbedUsesTheFolderDeclaredPooling(t *testing.T) {
	dir := tinyModelCopy(t)
	embed := embedder(t, dir, "book a table for two\nis it going to rain\n")
	cls := embed("cls", 0) // before the folder declares anything: raw [CLS] states
	if err := sbert.Write(dir, sbert.Layout{Pooling: models.CLS, Normalize: true, MaxSeqLength: 16, Dim: 32}); err != nil {
		t.Fatal(err)
	}
	declared := embed("", 0)
	mean := embed("mean", 0)
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

// A folder declaring max_seq_length 8 is embedded as sentence-transformers embeds it: texts cut at 8 tokens,
// unless --max-length says otherwise. (sentence-transformers loads a convrep model folder with its declared
// length; truncating at the position limit instead gave vectors up to 0.064 apart on long utterances.)
func TestEmbedTruncatesAtTheFolderDeclaredLength(t *testing.T) {
	dir := tinyModelCopy(t)
	if err := sbert.Write(dir, sbert.Layout{Pooling: models.Mean, Normalize: true, MaxSeqLength: 8, Dim: 32}); err != nil {
		t.Fatal(err)
	}
	embed := embedder(t, dir, "i would like to book a table for two people at an italian restaurant in the centre tonight\nhi\n")
	declared, at8, whole := embed("", 0), embed("", 8), embed("", 512)
	for _, c := range []struct {
		name      string
		a, b      []record
		text      int
		wantEqual bool
	}{
		{"long text, default against --max-length 8", declared, at8, 0, true},
		{"long text, default against the position limit", declared, whole, 0, false},
		{"short text, default against the position limit", declared, whole, 1, true},
	} {
		same := true
		for j := range c.a[c.text].Embedding {
			if math.Abs(float64(c.a[c.text].Embedding[j]-c.b[c.text].Embedding[j])) > 1e-6 {
				same = false
			}
		}
		if same != c.wantEqual {
			t.Errorf("%s: equal %v, want %v", c.name, same, c.wantEqual)
		}
	}
}

// Empty texts are counted and named by line: embedded by default (one output line per input text), left out
// with --skip-empty; either way the run warns.
func TestEmbedCountsEmptyTexts(t *testing.T) {
	tmp := t.TempDir()
	model := shared.MustPath(t, "fixtures", "tiny-bert")
	for _, c := range []struct {
		name, file, content string
		skip                bool
		wantTexts           []string
		wantWarn            string
	}{
		{"txt kept", "a.txt", "hello\n\nworld\n   \n", false, []string{"hello", "", "world", "   "},
			"a.txt: 2 empty text(s), at line 2, 4: embedded as the empty text ([CLS] [SEP]); pass --skip-empty to leave them out"},
		{"txt skipped", "b.txt", "hello\n\nworld\n", true, []string{"hello", "world"},
			"b.txt: 1 empty text(s), at line 2: left out (--skip-empty)"},
		{"jsonl", "c.jsonl", "{\"text\": \"hi\"}\n\n{\"text\": \"\"}\n", false, []string{"hi", ""},
			"c.jsonl: 1 empty text(s), at line 3: embedded"},
		{"none empty", "d.txt", "hi\nthere\n", false, []string{"hi", "there"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := filepath.Join(tmp, c.file)
			if err := os.WriteFile(in, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(tmp, c.name+".jsonl")
			core, logs := observer.New(zap.WarnLevel)
			o := options{Encoding: modelref.Encoding{Model: model, Pooling: "mean", Device: "cpu", Truncation: "right"}, input: in, output: out, batchSize: 8, skipEmpty: c.skip}
			if err := run(context.Background(), o, zap.New(core)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range readOutput(t, out) {
				got = append(got, r.Text)
			}
			if !slices.Equal(got, c.wantTexts) {
				t.Errorf("embedded %q, want %q", got, c.wantTexts)
			}
			warned := ""
			if e := logs.All(); len(e) > 0 {
				warned = e[0].Message
			}
			if (c.wantWarn == "") != (warned == "") || !strings.Contains(warned, c.wantWarn) {
				t.Errorf("warning %q, want one with %q", warned, c.wantWarn)
			}
		})
	}
}
