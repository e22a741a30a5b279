package tokenizers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// readJSONMap reads a JSON object; a missing file gives (nil, nil).
func readJSONMap(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return m, nil
}

// parseAddedToken reads a special-token value: a string, or an AddedToken
// record {"content": ..., "lstrip": ..., ...} (with or without "__type").
// A JSON null gives ok=false.
func parseAddedToken(v any) (addedToken, bool, error) {
	switch x := v.(type) {
	case nil:
		return addedToken{}, false, nil
	case string:
		return plainToken(x), true, nil
	case map[string]any:
		c, ok := x["content"].(string)
		if !ok {
			return addedToken{}, false, fmt.Errorf("token record without a string \"content\": %v", x)
		}
		a := addedToken{Content: c, Record: true, Normalized: true}
		for key, dst := range map[string]*bool{"lstrip": &a.Lstrip, "rstrip": &a.Rstrip, "single_word": &a.SingleWord, "normalized": &a.Normalized} {
			if b, ok := x[key].(bool); ok {
				*dst = b
			}
		}
		return a, true, nil
	}
	return addedToken{}, false, fmt.Errorf("token value %v is neither a string nor a record", v)
}

// applySpecials overrides t.special / t.additional with the values found in
// m (tokenizer_config.json or special_tokens_map.json).
func (t *Tokenizer) applySpecials(m map[string]any, file string) error {
	for _, name := range specialNames {
		v, present := m[name]
		if !present {
			continue
		}
		a, ok, err := parseAddedToken(v)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", file, name, err)
		}
		if !ok {
			delete(t.special, name)
			continue
		}
		t.special[name] = t.slotToken(name, a)
	}
	v, present := m["additional_special_tokens"]
	if !present || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%s: additional_special_tokens is not a list", file)
	}
	t.additional = t.additional[:0]
	for i, e := range list {
		a, ok, err := parseAddedToken(e)
		if err != nil {
			return fmt.Errorf("%s: additional_special_tokens[%d]: %w", file, i, err)
		}
		if ok && a.Content != "" {
			t.additional = append(t.additional, a)
		}
	}
	return nil
}

// slotToken applies RobertaTokenizer's constructor rule: its named special
// tokens given as strings become records that keep their surrounding
// spaces, except <mask>, which eats the space on its left.
func (t *Tokenizer) slotToken(name string, a addedToken) addedToken {
	if t.kind != ByteLevelBPE || a.Record {
		return a
	}
	return addedToken{Content: a.Content, Record: true, Normalized: true, Lstrip: name == "mask_token"}
}

// defaultSpecials are the classes' constructor defaults.
func (t *Tokenizer) defaultSpecials() {
	var d map[string]string
	if t.kind == WordPiece {
		d = map[string]string{"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}
	} else {
		d = map[string]string{"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>"}
	}
	t.special = map[string]addedToken{}
	for name, s := range d {
		t.special[name] = t.slotToken(name, plainToken(s))
	}
}

// applyOptions reads the tokenizer options from tokenizer_config.json.
func (t *Tokenizer) applyOptions(cfg map[string]any, file string) error {
	boolOpt := func(key string, dst *bool) error {
		v, ok := cfg[key]
		if !ok || v == nil {
			return nil
		}
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%s: %s is %v, not a boolean", file, key, v)
		}
		*dst = b
		return nil
	}
	for key, dst := range map[string]*bool{
		"do_lower_case":          &t.doLowerCase,
		"tokenize_chinese_chars": &t.chineseChars,
		"do_basic_tokenize":      &t.basicTokenize,
		"add_prefix_space":       &t.addPrefixSpace,
	} {
		if err := boolOpt(key, dst); err != nil {
			return err
		}
	}
	if v, ok := cfg["strip_accents"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%s: strip_accents is %v, not a boolean", file, v)
		}
		t.stripAccents = &b
	}
	if v, ok := cfg["model_max_length"]; ok && v != nil {
		f, ok := v.(float64)
		if !ok {
			return fmt.Errorf("%s: model_max_length is %v, not a number", file, v)
		}
		if f > 0 && f < 1<<31 { // HF writes 1e30 for "no limit"
			t.modelMaxLength = int(f)
		}
	}
	if v, ok := cfg["never_split"]; ok && v != nil {
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: never_split is not a list", file)
		}
		for _, e := range list {
			if s, ok := e.(string); ok {
				t.neverSplit[s] = true
			}
		}
	}
	return nil
}
