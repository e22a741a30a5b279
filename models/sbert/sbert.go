// Package sbert makes a HuggingFace model folder a sentence-transformers model too, and reads one back: the
// files SentenceTransformer.save writes beside the Transformer module's own (modules.json,
// config_sentence_transformers.json, sentence_bert_config.json, 1_Pooling/config.json and 2_Normalize/), so
// that `SentenceTransformer(path)` embeds with the pooling and normalisation convrep trained and evaluated
// with, and convrep's own tools default to what a folder declares.
package sbert

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"convrep/internal/atomicfile"
	"convrep/models"
)

// Layout is what the sentence-transformers files of a folder say.
type Layout struct {
	Pooling      models.Pooling // the Pooling module's mode (mean or cls: what convrep embeds with)
	Normalize    bool           // a Normalize module follows: embeddings are L2-normalised
	MaxSeqLength int            // sentence_bert_config.json's max_seq_length (0: none)
	Dim          int64          // the Pooling module's word_embedding_dimension
	LowerCase    bool           // sentence_bert_config.json's do_lower_case
}

// The module types sentence-transformers loads by class path.
const (
	transformerType = "sentence_transformers.models.Transformer"
	poolingType     = "sentence_transformers.models.Pooling"
	normalizeType   = "sentence_transformers.models.Normalize"
	poolingDir      = "1_Pooling"
	normalizeDir    = "2_Normalize"
)

// module is one entry of modules.json.
type module struct {
	Idx  int    `json:"idx"`
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
}

// poolingModes are the Pooling config's mode keys; exactly one is true in a folder convrep can embed with.
var poolingModes = map[string]models.Pooling{
	"pooling_mode_cls_token":            models.CLS,
	"pooling_mode_mean_tokens":          models.Mean,
	"pooling_mode_max_tokens":           "max",
	"pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len",
	"pooling_mode_weightedmean_tokens":  "weightedmean",
	"pooling_mode_lasttoken":            "lasttoken",
}

// Write adds the sentence-transformers files for l to dir, which already holds the model in HuggingFace
// layout (config.json, weights, tokenizer). Each file is written atomically.
func Write(dir string, l Layout) error {
	if _, err := models.ParsePooling(string(l.Pooling)); err != nil {
		return fmt.Errorf("sentence-transformers layout: %w", err)
	}
	if l.Dim <= 0 {
		return fmt.Errorf("sentence-transformers layout: embedding dimension %d", l.Dim)
	}
	mods := []module{{0, "0", "", transformerType}, {1, "1", poolingDir, poolingType}}
	if l.Normalize {
		mods = append(mods, module{2, "2", normalizeDir, normalizeType})
	}
	pool := map[string]any{"word_embedding_dimension": l.Dim, "include_prompt": true}
	for key, mode := range poolingModes {
		pool[key] = mode == l.Pooling
	}
	files := []struct {
		path string
		v    any
	}{
		{"modules.json", mods},
		{"sentence_bert_config.json", map[string]any{"max_seq_length": l.MaxSeqLength, "do_lower_case": l.LowerCase}},
		{"config_sentence_transformers.json", map[string]any{
			"__version__":         map[string]string{"sentence_transformers": "3.0.0"},
			"prompts":             map[string]string{},
			"default_prompt_name": nil,
			"similarity_fn_name":  "cosine",
		}},
		{filepath.Join(poolingDir, "config.json"), pool},
	}
	if l.Normalize {
		if err := os.MkdirAll(filepath.Join(dir, normalizeDir), 0o755); err != nil {
			return err
		}
	}
	for _, f := range files {
		b, err := json.MarshalIndent(f.v, "", "  ")
		if err != nil {
			return err
		}
		p := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(p, append(b, '\n')); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// ErrNone is returned by Read for a folder without modules.json: a plain HuggingFace model.
var ErrNone = errors.New("no sentence-transformers modules.json")

// Read reads the sentence-transformers files of dir, as convrep or sentence-transformers wrote them. A
// folder without modules.json gives ErrNone; a malformed file, or a module convrep cannot apply (a pooling
// mode other than mean or cls, a Dense layer), is an error naming the file and the key.
func Read(dir string) (Layout, error) {
	var l Layout
	var mods []module
	if err := readJSON(dir, "modules.json", &mods); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return l, ErrNone
		}
		return l, err
	}
	var pooling string
	for i, m := range mods {
		switch m.Type {
		case transformerType:
			if i != 0 {
				return l, fmt.Errorf("%s: module %d: the Transformer must come first", filepath.Join(dir, "modules.json"), i)
			}
		case poolingType:
			pooling = m.Path
		case normalizeType:
			l.Normalize = true
		default:
			return l, fmt.Errorf("%s: module %d is a %s, which convrep does not apply", filepath.Join(dir, "modules.json"), i, m.Type)
		}
		if !localPath(m.Path) {
			return l, fmt.Errorf("%s: module %d: path %q leaves the folder", filepath.Join(dir, "modules.json"), i, m.Path)
		}
	}
	if len(mods) == 0 || mods[0].Type != transformerType || pooling == "" {
		return l, fmt.Errorf("%s: want a Transformer module followed by a Pooling module", filepath.Join(dir, "modules.json"))
	}
	var cfg map[string]any
	name := filepath.Join(pooling, "config.json")
	if err := readJSON(dir, name, &cfg); err != nil {
		return l, err
	}
	var on []string
	for key, mode := range poolingModes {
		v, ok := cfg[key]
		if !ok {
			continue
		}
		b, isBool := v.(bool)
		if !isBool {
			return l, fmt.Errorf("%s: %s = %v, want true or false", filepath.Join(dir, name), key, v)
		}
		if b {
			on = append(on, key)
			l.Pooling = mode
		}
	}
	if mode, ok := cfg["pooling_mode"].(string); ok && len(on) == 0 { // newer configs may name the mode directly
		l.Pooling, on = models.Pooling(mode), []string{"pooling_mode"}
	}
	if len(on) != 1 {
		return l, fmt.Errorf("%s: %d pooling modes on (%s), convrep applies exactly one", filepath.Join(dir, name), len(on), strings.Join(on, ", "))
	}
	if _, err := models.ParsePooling(string(l.Pooling)); err != nil {
		return l, fmt.Errorf("%s: %s: %w", filepath.Join(dir, name), on[0], err)
	}
	if d, ok := cfg["word_embedding_dimension"].(float64); ok {
		l.Dim = int64(d)
	}
	var sb map[string]any
	if err := readJSON(dir, "sentence_bert_config.json", &sb); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l, err
	}
	if v, ok := sb["max_seq_length"]; ok && v != nil {
		n, isNum := v.(float64)
		if !isNum || n < 0 || n != float64(int(n)) {
			return l, fmt.Errorf("%s: max_seq_length = %v, want a whole number", filepath.Join(dir, "sentence_bert_config.json"), v)
		}
		l.MaxSeqLength = int(n)
	}
	l.LowerCase, _ = sb["do_lower_case"].(bool)
	return l, nil
}

// readJSON decodes dir/name into v; its errors name the file.
func readJSON(dir, name string, v any) error {
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// localPath reports whether a module path stays inside the model folder.
func localPath(p string) bool {
	return p == "" || (!filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.HasPrefix(p, ".."))
}
