package tokenizers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
)

// Save writes the tokenizer in HuggingFace's slow layout (what
// save_pretrained writes): vocab.txt or vocab.json + merges.txt,
// tokenizer_config.json, special_tokens_map.json and, when tokens were
// added, added_tokens.json. JSON is indented by two spaces with sorted
// keys, as HF writes it, so files loaded from HF come back byte-identical.
func (t *Tokenizer) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save tokenizer: %w", err)
	}
	files := map[string][]byte{}
	if t.kind == WordPiece {
		var b bytes.Buffer
		for _, tok := range t.tokens {
			if strings.ContainsAny(tok, "\r\n") {
				return fmt.Errorf("save tokenizer to %s: token %q cannot be written to %s", dir, tok, vocabTxtFile)
			}
			b.WriteString(tok)
			b.WriteByte('\n')
		}
		files[vocabTxtFile] = b.Bytes()
	} else {
		v, err := hfJSON(t.vocab)
		if err != nil {
			return fmt.Errorf("save tokenizer to %s: %s: %w", dir, vocabJSONFile, err)
		}
		files[vocabJSONFile] = v
		var b bytes.Buffer
		b.WriteString("#version: 0.2\n")
		for _, m := range t.bpe.merges {
			b.WriteString(m[0] + " " + m[1] + "\n")
		}
		files[mergesFile] = b.Bytes()
	}

	stm := map[string]any{}
	cfg := maps.Clone(t.config)
	if cfg == nil {
		cfg = map[string]any{}
	}
	for _, name := range specialNames {
		a, ok := t.special[name]
		if !ok {
			continue
		}
		stm[name] = a.mapValue(false)
		cfg[name] = a.mapValue(true)
	}
	if len(t.additional) > 0 {
		list := make([]any, len(t.additional))
		for i, a := range t.additional {
			list[i] = a.mapValue(false)
		}
		stm["additional_special_tokens"] = list
		if _, ok := cfg["additional_special_tokens"]; ok {
			cfg["additional_special_tokens"] = list
		}
	}
	t.configOptions(cfg)

	for name, v := range map[string]any{configFile: cfg, specialMapFile: stm} {
		b, err := hfJSON(v)
		if err != nil {
			return fmt.Errorf("save tokenizer to %s: %s: %w", dir, name, err)
		}
		files[name] = b
	}
	if len(t.added) > 0 {
		m := make(map[string]int, len(t.added))
		for _, s := range t.added {
			m[s] = t.addedID[s]
		}
		b, err := hfJSON(m)
		if err != nil {
			return fmt.Errorf("save tokenizer to %s: %s: %w", dir, addedTokensFile, err)
		}
		files[addedTokensFile] = b
	} else if err := os.Remove(filepath.Join(dir, addedTokensFile)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("save tokenizer: remove stale %s: %w", addedTokensFile, err)
	}
	for name, b := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("save tokenizer: %w", err)
		}
	}
	return nil
}

// configOptions records the options this package reads, keeping whatever
// else tokenizer_config.json held.
func (t *Tokenizer) configOptions(cfg map[string]any) {
	if t.kind == WordPiece {
		cfg["do_lower_case"] = t.doLowerCase
		cfg["do_basic_tokenize"] = t.basicTokenize
		cfg["tokenize_chinese_chars"] = t.chineseChars
		if t.stripAccents != nil {
			cfg["strip_accents"] = *t.stripAccents
		} else {
			cfg["strip_accents"] = nil
		}
		if len(t.neverSplit) > 0 {
			list := make([]string, 0, len(t.neverSplit))
			for s := range t.neverSplit {
				list = append(list, s)
			}
			cfg["never_split"] = list
		}
		if _, ok := cfg["tokenizer_class"]; !ok {
			cfg["tokenizer_class"] = "BertTokenizer"
		}
	} else {
		cfg["add_prefix_space"] = t.addPrefixSpace
		if _, ok := cfg["tokenizer_class"]; !ok {
			cfg["tokenizer_class"] = "RobertaTokenizer"
		}
	}
	if t.modelMaxLength > 0 {
		cfg["model_max_length"] = t.modelMaxLength
	}
}

// mapValue is the JSON form of a special token: a string, or an
// AddedToken record ("__type" is added inside tokenizer_config.json).
func (a addedToken) mapValue(typed bool) any {
	if !a.Record {
		return a.Content
	}
	m := map[string]any{
		"content": a.Content, "lstrip": a.Lstrip, "rstrip": a.Rstrip,
		"single_word": a.SingleWord, "normalized": a.Normalized,
	}
	if typed {
		m["__type"] = "AddedToken"
	}
	return m
}

// hfJSON formats v as Python's json.dumps(v, indent=2, sort_keys=True,
// ensure_ascii=False) + "\n".
func hfJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
