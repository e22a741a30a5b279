package tokenizers

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// tokenizerJSON is what this package takes from a "fast" tokenizer.json:
// the model's vocabulary (and merges), the normaliser's options and the
// added tokens. Encoding then runs through the same code as the slow
// files, so the same fixes apply.
type tokenizerJSON struct {
	kind   Kind
	vocab  map[string]int
	merges [][2]string
	added  []savedToken
	// Flags of the tokens listed in added_tokens, for the special slots.
	records map[string]addedToken

	lowercase, stripSet, strip, chinese, prefixSpace bool
}

type tjFile struct {
	AddedTokens []struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		Lstrip     bool   `json:"lstrip"`
		Rstrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer   *tjNormalizer   `json:"normalizer"`
	PreTokenizer *tjPreTokenizer `json:"pre_tokenizer"`
	Model        struct {
		Type                    string          `json:"type"`
		UnkToken                *string         `json:"unk_token"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
		MaxInputCharsPerWord    *int            `json:"max_input_chars_per_word"`
		Dropout                 *float64        `json:"dropout"`
		Vocab                   map[string]int  `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
	} `json:"model"`
}

type tjNormalizer struct {
	Type               string          `json:"type"`
	Lowercase          *bool           `json:"lowercase"`
	StripAccents       *bool           `json:"strip_accents"`
	HandleChineseChars *bool           `json:"handle_chinese_chars"`
	Normalizers        []*tjNormalizer `json:"normalizers"`
}

type tjPreTokenizer struct {
	Type           string            `json:"type"`
	AddPrefixSpace bool              `json:"add_prefix_space"`
	PreTokenizers  []*tjPreTokenizer `json:"pretokenizers"`
}

// readTokenizerJSON parses path. Only WordPiece models and byte-level BPE
// models (GPT-2 / RoBERTa) are accepted.
func readTokenizerJSON(path string) (*tokenizerJSON, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var f tjFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	tj := &tokenizerJSON{vocab: f.Model.Vocab, records: map[string]addedToken{}, chinese: true}
	if len(tj.vocab) == 0 {
		return nil, fmt.Errorf("%s: model has no vocabulary", path)
	}
	mtype := f.Model.Type
	if mtype == "" && f.Model.Merges != nil {
		mtype = "BPE"
	}
	switch mtype {
	case "WordPiece":
		tj.kind = WordPiece
		if p := f.Model.ContinuingSubwordPrefix; p != nil && *p != "##" {
			return nil, fmt.Errorf("%s: continuing_subword_prefix %q is not supported (only \"##\")", path, *p)
		}
		if n := f.Model.MaxInputCharsPerWord; n != nil && *n != 100 {
			return nil, fmt.Errorf("%s: max_input_chars_per_word %d is not supported (only 100)", path, *n)
		}
	case "BPE":
		tj.kind = ByteLevelBPE
		if !f.PreTokenizer.has("ByteLevel") {
			return nil, fmt.Errorf("%s: BPE without a ByteLevel pre-tokenizer is not supported", path)
		}
		if (f.Model.ContinuingSubwordPrefix != nil && *f.Model.ContinuingSubwordPrefix != "") ||
			(f.Model.EndOfWordSuffix != nil && *f.Model.EndOfWordSuffix != "") || f.Model.Dropout != nil {
			return nil, fmt.Errorf("%s: BPE with subword affixes or dropout is not supported", path)
		}
		if tj.merges, err = parseJSONMerges(f.Model.Merges); err != nil {
			return nil, fmt.Errorf("%s: merges: %w", path, err)
		}
		tj.prefixSpace = f.PreTokenizer.prefixSpace()
	default:
		return nil, fmt.Errorf("%s: model type %q is not supported (WordPiece or BPE)", path, mtype)
	}
	if n := f.Normalizer; n != nil {
		if tj.kind == ByteLevelBPE {
			return nil, fmt.Errorf("%s: byte-level BPE with a %q normalizer is not supported", path, n.Type)
		}
		var bad string
		n.walk(func(x *tjNormalizer) {
			switch x.Type {
			case "BertNormalizer":
				tj.lowercase = x.Lowercase == nil || *x.Lowercase
				if x.StripAccents != nil {
					tj.stripSet, tj.strip = true, *x.StripAccents
				}
				if x.HandleChineseChars != nil {
					tj.chinese = *x.HandleChineseChars
				}
			case "Lowercase":
				tj.lowercase = true
			case "StripAccents":
				tj.stripSet, tj.strip = true, true
			case "Sequence", "NFD": // NFD only matters for accent stripping, which decomposes anyway
			default:
				bad = x.Type
			}
		})
		if bad != "" {
			return nil, fmt.Errorf("%s: normalizer %q is not supported", path, bad)
		}
	}
	for _, a := range f.AddedTokens {
		tj.added = append(tj.added, savedToken{content: a.Content, id: a.ID, special: a.Special})
		tj.records[a.Content] = addedToken{Content: a.Content, Lstrip: a.Lstrip, Rstrip: a.Rstrip,
			SingleWord: a.SingleWord, Normalized: a.Normalized, Record: true}
	}
	return tj, nil
}

// parseJSONMerges accepts both ["a b", ...] and [["a","b"], ...].
func parseJSONMerges(raw json.RawMessage) ([][2]string, error) {
	var asStrings []string
	if err := json.Unmarshal(raw, &asStrings); err == nil {
		out := make([][2]string, 0, len(asStrings))
		for i, s := range asStrings {
			f := strings.Split(s, " ")
			if len(f) != 2 {
				return nil, fmt.Errorf("merge %d %q is not two symbols", i, s)
			}
			out = append(out, [2]string{f[0], f[1]})
		}
		return out, nil
	}
	var asPairs [][2]string
	if err := json.Unmarshal(raw, &asPairs); err != nil {
		return nil, err
	}
	return asPairs, nil
}

func (n *tjNormalizer) walk(fn func(*tjNormalizer)) {
	fn(n)
	for _, c := range n.Normalizers {
		if c != nil {
			c.walk(fn)
		}
	}
}

func (p *tjPreTokenizer) has(typ string) bool {
	if p == nil {
		return false
	}
	if p.Type == typ {
		return true
	}
	for _, c := range p.PreTokenizers {
		if c.has(typ) {
			return true
		}
	}
	return false
}

func (p *tjPreTokenizer) prefixSpace() bool {
	if p == nil {
		return false
	}
	if p.Type == "ByteLevel" {
		return p.AddPrefixSpace
	}
	for _, c := range p.PreTokenizers {
		if c.prefixSpace() {
			return true
		}
	}
	return false
}

// applyTo sets the options tokenizer.json implies; tokenizer_config.json
// and special_tokens_map.json, applied afterwards, take precedence. The
// special slots take the flags of the matching added_tokens entries (the
// fast format keeps <mask>'s lstrip there).
func (tj *tokenizerJSON) applyTo(t *Tokenizer) {
	t.doLowerCase = tj.lowercase
	if tj.stripSet {
		s := tj.strip
		t.stripAccents = &s
	}
	t.chineseChars = tj.chinese
	t.addPrefixSpace = tj.prefixSpace
	for name, a := range t.special {
		if r, ok := tj.records[a.Content]; ok {
			t.special[name] = r
		}
	}
}
