package tokenizers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeTokenizerJSON writes a "fast" tokenizer.json (and nothing else)
// holding the same vocabulary as a slow fixture directory.
func writeTokenizerJSON(t *testing.T, slow *Tokenizer, pairMerges bool) string {
	t.Helper()
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		Lstrip     bool   `json:"lstrip"`
		Rstrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var addedTokens []added
	seen := map[string]bool{}
	for _, name := range specialNames {
		a, ok := slow.special[name]
		if !ok || seen[a.Content] {
			continue
		}
		seen[a.Content] = true
		id, _ := slow.tokenID(a.Content)
		addedTokens = append(addedTokens, added{ID: id, Content: a.Content, Lstrip: a.Lstrip, Special: true})
	}
	for _, s := range slow.added {
		addedTokens = append(addedTokens, added{ID: slow.addedID[s], Content: s, Special: slow.allSpecial[s]})
	}
	doc := map[string]any{"version": "1.0", "added_tokens": addedTokens}
	if slow.kind == WordPiece {
		doc["normalizer"] = map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
			"strip_accents": nil, "lowercase": true}
		doc["pre_tokenizer"] = map[string]any{"type": "BertPreTokenizer"}
		doc["model"] = map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
			"max_input_chars_per_word": 100, "vocab": slow.vocab}
	} else {
		doc["normalizer"] = nil
		doc["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
		var merges any
		if pairMerges {
			merges = slow.bpe.merges
		} else {
			list := make([]string, len(slow.bpe.merges))
			for i, m := range slow.bpe.merges {
				list[i] = m[0] + " " + m[1]
			}
			merges = list
		}
		doc["model"] = map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "vocab": slow.vocab, "merges": merges}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, tokenizerJSONFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTokenizerJSON loads tokenizer.json-only directories and expects the
// same results as the slow files on every fixture case.
func TestTokenizerJSON(t *testing.T) {
	for _, tc := range []struct {
		name, cases string
		slow        func(t testing.TB) *Tokenizer
		pairMerges  bool
	}{
		{"wordpiece", "bert_uncased_cases.jsonl", caseFiles[0].setup, false},
		{"bpe", "roberta_cases.jsonl", caseFiles[1].setup, false},
		{"bpe-pair-merges", "roberta_cases.jsonl", caseFiles[1].setup, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow := tc.slow(t)
			fast := mustLoad(t, writeTokenizerJSON(t, slow, tc.pairMerges))
			if fast.Kind() != slow.Kind() || fast.VocabSize() != slow.VocabSize() || fast.PadID() != slow.PadID() {
				t.Fatalf("kind/size/pad %v/%d/%d, want %v/%d/%d", fast.Kind(), fast.VocabSize(), fast.PadID(),
					slow.Kind(), slow.VocabSize(), slow.PadID())
			}
			matched := 0
			cases := readCases(t, tc.cases)
			for _, c := range cases {
				got, err := fast.Tokenize(c.Text)
				ids, err2 := fast.Encode(c.Text)
				if err != nil || err2 != nil || !equalStrings(got, c.Tokens) || !reflect.DeepEqual(ids, c.IDs) {
					t.Errorf("case %d %q: %q %v (%v %v), want %q %v", c.Case, c.Text, got, ids, err, err2, c.Tokens, c.IDs)
					continue
				}
				matched++
			}
			t.Logf("%s via tokenizer.json: %d/%d", tc.cases, matched, len(cases))
			// Saving writes the slow layout, which loads back the same.
			dir := t.TempDir()
			if err := fast.Save(dir); err != nil {
				t.Fatal(err)
			}
			back := mustLoad(t, dir)
			for _, c := range cases[:40] {
				a, _ := fast.Encode(c.Text)
				b, _ := back.Encode(c.Text)
				if !reflect.DeepEqual(a, b) {
					t.Errorf("case %d after Save: %v, want %v", c.Case, b, a)
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	empty := t.TempDir()
	if _, err := Load(empty); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("Load(empty dir) error %v, want one naming the directory", err)
	}
	missing := filepath.Join(empty, "nope")
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load(missing dir) error %v, want one naming it", err)
	}
	badCfg := t.TempDir()
	os.WriteFile(filepath.Join(badCfg, vocabTxtFile), []byte("[PAD]\n[UNK]\n[CLS]\n[SEP]\n"), 0o644)
	os.WriteFile(filepath.Join(badCfg, configFile), []byte("{not json"), 0o644)
	if _, err := Load(badCfg); err == nil || !strings.Contains(err.Error(), configFile) {
		t.Errorf("bad config error %v, want one naming %s", err, configFile)
	}
	gap := t.TempDir()
	os.WriteFile(filepath.Join(gap, vocabTxtFile), []byte("[PAD]\n[UNK]\n[CLS]\n[SEP]\n"), 0o644)
	os.WriteFile(filepath.Join(gap, addedTokensFile), []byte(`{"[USR]": 7}`), 0o644)
	if _, err := Load(gap); err == nil || !strings.Contains(err.Error(), addedTokensFile) {
		t.Errorf("added token with a gap: error %v, want one naming %s", err, addedTokensFile)
	}
	dup := t.TempDir()
	os.WriteFile(filepath.Join(dup, vocabTxtFile), []byte("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[UNK]\n"), 0o644)
	if _, err := Load(dup); err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Errorf("duplicate vocab line: error %v", err)
	}
	unsupported := t.TempDir()
	os.WriteFile(filepath.Join(unsupported, tokenizerJSONFile), []byte(`{"model":{"type":"Unigram","vocab":{"a":0}}}`), 0o644)
	if _, err := Load(unsupported); err == nil || !strings.Contains(err.Error(), "Unigram") {
		t.Errorf("Unigram tokenizer.json: error %v", err)
	}
	nocls := t.TempDir()
	os.WriteFile(filepath.Join(nocls, vocabTxtFile), []byte("[PAD]\n[UNK]\n"), 0o644)
	if _, err := Load(nocls); err == nil {
		t.Error("vocabulary without [CLS]/[SEP] accepted")
	}
}
