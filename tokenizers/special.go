package tokenizers

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// addedToken is a special or added token as HuggingFace stores it: either
// a plain string or an AddedToken record whose flags say whether the
// whitespace next to it is eaten.
type addedToken struct {
	Content    string
	Lstrip     bool // eats the whitespace on its left
	Rstrip     bool // eats the whitespace on its right
	SingleWord bool // kept for Save; the slow tokenizer ignores it
	Normalized bool // kept for Save; the slow tokenizer ignores it
	// Record is true for an AddedToken record; a plain string instead eats
	// the whitespace on both sides (HF's slow default).
	Record bool
}

// plainToken is a special token written as a plain string.
func plainToken(s string) addedToken { return addedToken{Content: s} }

// stripsLeft/stripsRight report the HF slow behaviour around the token.
func (a addedToken) stripsLeft() bool  { return !a.Record || a.Lstrip }
func (a addedToken) stripsRight() bool { return !a.Record || a.Rstrip }

// specialNames are the named special-token slots, in HF's attribute order
// (later entries win when one string fills two roles).
var specialNames = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// noSplit matches the tokens that are cut out of raw text before the model
// sees it: every special token and every added token. Matching is
// case-sensitive and leftmost-longest, like HF's trie.
type noSplit struct {
	byFirst [256][]*addedToken // longest first
	tokens  map[string]*addedToken
}

func newNoSplit(tokens []addedToken) *noSplit {
	ns := &noSplit{tokens: make(map[string]*addedToken, len(tokens))}
	for i := range tokens {
		t := tokens[i]
		if t.Content == "" {
			continue
		}
		ns.tokens[t.Content] = &t
	}
	for _, t := range ns.tokens {
		b := t.Content[0]
		ns.byFirst[b] = append(ns.byFirst[b], t)
	}
	for i := range ns.byFirst {
		l := ns.byFirst[i]
		sort.Slice(l, func(a, b int) bool {
			if len(l[a].Content) != len(l[b].Content) {
				return len(l[a].Content) > len(l[b].Content)
			}
			return l[a].Content < l[b].Content
		})
	}
	return ns
}

// at returns the token starting at s[i:], if any.
func (ns *noSplit) at(s string, i int) *addedToken {
	for _, t := range ns.byFirst[s[i]] {
		if strings.HasPrefix(s[i:], t.Content) {
			return t
		}
	}
	return nil
}

// lowerOutside lowercases s as Python would, leaving the no-split tokens
// as they are: HF lowercases before matching them, so a special "[USR]"
// survives while an added "[usr]" also catches "[USR]".
func (ns *noSplit) lowerOutside(s string) string {
	lower := true
	for i := 0; i < len(s) && lower; i++ {
		lower = s[i] < utf8.RuneSelf && (s[i] < 'A' || s[i] > 'Z')
	}
	if lower {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		if t := ns.at(s, i); t != nil {
			b = append(b, t.Content...)
			i += len(t.Content)
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		b = appendPyLower(b, r)
		i += w
	}
	return string(b)
}

// segment is a stretch of text, or a matched no-split token when tok is set.
type segment struct {
	text string
	tok  *addedToken
}

// split cuts s on the no-split tokens and strips the whitespace they eat
// from the neighbouring text, as HF's slow tokenize does.
func (ns *noSplit) split(s string, dst []segment) []segment {
	dst = dst[:0]
	last := 0
	for i := 0; i < len(s); {
		t := ns.at(s, i)
		if t == nil {
			i++
			continue
		}
		if i > last {
			dst = append(dst, segment{text: s[last:i]})
		}
		dst = append(dst, segment{text: t.Content, tok: t})
		i += len(t.Content)
		last = i
	}
	if last < len(s) {
		dst = append(dst, segment{text: s[last:]})
	}
	for i, sg := range dst {
		if sg.tok == nil {
			continue
		}
		if sg.tok.stripsRight() && i+1 < len(dst) && dst[i+1].tok == nil {
			dst[i+1].text = pyTrimLeft(dst[i+1].text)
		}
		if sg.tok.stripsLeft() && i > 0 && dst[i-1].tok == nil {
			dst[i-1].text = pyTrimRight(dst[i-1].text)
		}
	}
	return dst
}
