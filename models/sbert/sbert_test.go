package sbert

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"convrep/models"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readJSONFile(t *testing.T, p string) any {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return v
}

// What Write puts in a folder is sentence-transformers' layout, file by file and key by key: a Transformer
// at the folder's root, Pooling in 1_Pooling with one mode on, Normalize in 2_Normalize when asked.
func TestWriteLayout(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, Layout{Pooling: models.Mean, Normalize: true, MaxSeqLength: 64, Dim: 256}); err != nil {
		t.Fatal(err)
	}
	wantModules := []any{
		map[string]any{"idx": 0.0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
		map[string]any{"idx": 1.0, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
		map[string]any{"idx": 2.0, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
	}
	if got := readJSONFile(t, filepath.Join(dir, "modules.json")); !reflect.DeepEqual(got, wantModules) {
		t.Errorf("modules.json = %v", got)
	}
	pool := readJSONFile(t, filepath.Join(dir, "1_Pooling", "config.json")).(map[string]any)
	for key, want := range map[string]any{"word_embedding_dimension": 256.0, "pooling_mode_mean_tokens": true,
		"pooling_mode_cls_token": false, "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false,
		"pooling_mode_weightedmean_tokens": false, "pooling_mode_lasttoken": false, "include_prompt": true} {
		if pool[key] != want {
			t.Errorf("1_Pooling/config.json %s = %v, want %v", key, pool[key], want)
		}
	}
	sb := readJSONFile(t, filepath.Join(dir, "sentence_bert_config.json")).(map[string]any)
	if sb["max_seq_length"] != 64.0 || sb["do_lower_case"] != false {
		t.Errorf("sentence_bert_config.json = %v", sb)
	}
	cst := readJSONFile(t, filepath.Join(dir, "config_sentence_transformers.json")).(map[string]any)
	if cst["similarity_fn_name"] != "cosine" || cst["__version__"] == nil {
		t.Errorf("config_sentence_transformers.json = %v", cst)
	}
	if st, err := os.Stat(filepath.Join(dir, "2_Normalize")); err != nil || !st.IsDir() {
		t.Errorf("no 2_Normalize folder: %v", err)
	}

	cls := t.TempDir()
	if err := Write(cls, Layout{Pooling: models.CLS, Dim: 32}); err != nil {
		t.Fatal(err)
	}
	if got := readJSONFile(t, filepath.Join(cls, "modules.json")).([]any); len(got) != 2 {
		t.Errorf("without normalisation, modules.json = %v, want Transformer and Pooling only", got)
	}
	if _, err := os.Stat(filepath.Join(cls, "2_Normalize")); err == nil {
		t.Error("2_Normalize written without normalisation")
	}
}

func TestWriteRefuses(t *testing.T) {
	for _, l := range []Layout{{Pooling: "max", Dim: 8}, {Pooling: models.Mean}} {
		if err := Write(t.TempDir(), l); err == nil {
			t.Errorf("%+v accepted", l)
		}
	}
}

// Read gives back what Write wrote, and reads folders sentence-transformers wrote itself (v2 without
// include_prompt, v3 with kwargs and prompts).
func TestRead(t *testing.T) {
	round := []Layout{
		{Pooling: models.Mean, Normalize: true, MaxSeqLength: 128, Dim: 768},
		{Pooling: models.CLS, MaxSeqLength: 512, Dim: 32, LowerCase: true},
	}
	for _, l := range round {
		dir := t.TempDir()
		if err := Write(dir, l); err != nil {
			t.Fatal(err)
		}
		got, err := Read(dir)
		if err != nil || got != l {
			t.Errorf("Read after Write(%+v) = %+v, %v", l, got, err)
		}
	}
	v2 := writeFiles(t, map[string]string{
		"modules.json": `[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
 {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]`,
		"1_Pooling/config.json": `{"word_embedding_dimension": 384, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true,
 "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false}`,
		"sentence_bert_config.json":         `{"max_seq_length": 256, "do_lower_case": false}`,
		"config_sentence_transformers.json": `{"__version__": {"sentence_transformers": "2.2.2", "transformers": "4.29.2", "pytorch": "2.0.1"}}`,
	})
	v3 := writeFiles(t, map[string]string{
		"modules.json": `[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer", "kwargs": ["task"]},
 {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
 {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]`,
		"1_Pooling/config.json": `{"word_embedding_dimension": 768, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false,
 "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false, "pooling_mode_weightedmean_tokens": false,
 "pooling_mode_lasttoken": false, "include_prompt": true}`,
		"sentence_bert_config.json": `{"max_seq_length": null, "do_lower_case": false}`,
	})
	for _, tc := range []struct {
		dir  string
		want Layout
	}{
		{v2, Layout{Pooling: models.Mean, MaxSeqLength: 256, Dim: 384}},
		{v3, Layout{Pooling: models.CLS, Normalize: true, Dim: 768}},
	} {
		if got, err := Read(tc.dir); err != nil || got != tc.want {
			t.Errorf("Read = %+v, %v; want %+v", got, err, tc.want)
		}
	}
	if _, err := Read(t.TempDir()); !errors.Is(err, ErrNone) {
		t.Errorf("a plain HuggingFace folder: %v, want ErrNone", err)
	}
}

func TestReadRejects(t *testing.T) {
	mods := `[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
 {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]`
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"max pooling", map[string]string{"modules.json": mods, "1_Pooling/config.json": `{"pooling_mode_max_tokens": true}`}, "pooling_mode_max_tokens"},
		{"two modes", map[string]string{"modules.json": mods, "1_Pooling/config.json": `{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}`}, "2 pooling modes"},
		{"no mode", map[string]string{"modules.json": mods, "1_Pooling/config.json": `{}`}, "0 pooling modes"},
		{"mode not a bool", map[string]string{"modules.json": mods, "1_Pooling/config.json": `{"pooling_mode_cls_token": "yes"}`}, "want true or false"},
		{"dense layer", map[string]string{"modules.json": `[{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
 {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}, {"idx": 2, "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]`}, "Dense"},
		{"path out of the folder", map[string]string{"modules.json": `[{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
 {"idx": 1, "path": "../elsewhere", "type": "sentence_transformers.models.Pooling"}]`}, "leaves the folder"},
		{"malformed modules", map[string]string{"modules.json": `[{"idx": 0,`}, "modules.json"},
		{"no pooling", map[string]string{"modules.json": `[{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"}]`}, "followed by a Pooling"},
		{"bad max_seq_length", map[string]string{"modules.json": mods, "1_Pooling/config.json": `{"pooling_mode_cls_token": true}`,
			"sentence_bert_config.json": `{"max_seq_length": -3}`}, "max_seq_length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(writeFiles(t, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
