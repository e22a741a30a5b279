package finetune

import (
	"strings"

	"convrep/evaluate/sets"
)

// Format says how a dialogue history becomes the text a model reads. A model pretrained with role tokens
// (TOD-BERT, FutureTOD: "[SYS]"/"[USR]" before each utterance, FutureTOD §2.1) reads them, as TOD-BERT's
// evaluation writes its inputs (utils/dataloader_dm.py, Dataset_dm.get_concat_context and
// concat_dh_sys_usr) — DSE §4.3 finds this format alone lifts TOD-BERT on dialogue act prediction; any
// other model reads the turns joined with its separator token.
type Format struct {
	Sep      string // the tokenizer's separator token, e.g. "[SEP]"
	Sys, Usr string // the role tokens, both empty for a model without them
}

// Tokenizer is the part of a tokenizer RoleFormat needs.
type Tokenizer interface {
	Tokenize(text string) ([]string, error)
}

// RoleTokens are TOD-BERT's defaults for --sys_token and --usr_token (utils/config.py).
const (
	SysToken = "[SYS]"
	UsrToken = "[USR]"
)

// NewFormat returns the format for a tokenizer whose separator token is sep: with role tokens when the
// tokenizer keeps both "[SYS]" and "[USR]" whole (special or added tokens), else without.
func NewFormat(tok Tokenizer, sep string) Format {
	f := Format{Sep: sep}
	for _, t := range []string{SysToken, UsrToken} {
		got, err := tok.Tokenize(t)
		if err != nil || len(got) != 1 || got[0] != t {
			return f
		}
	}
	f.Sys, f.Usr = SysToken, UsrToken
	return f
}

// Roles reports whether the format writes role tokens.
func (f Format) Roles() bool { return f.Sys != "" && f.Usr != "" }

// join is the separator between turns without role tokens: the separator token, spaced.
func (f Format) join() string { return " " + f.Sep + " " }

// History writes turns (system[i]: turn i is the system's). With role tokens it follows TOD-BERT's
// get_concat_context: each turn as "ROLE text " and the whole stripped; a history that opens with a user
// turn gets an empty system turn first, as TOD-BERT's histories always open with turn_sys, "" before the
// first user turn (utils_multiwoz.py read_langs_turn appends system_transcript "" of turn 0;
// utils_universal_act.py the turn_sys "" of a user-first dialogue). Without, the turns joined with " sep ".
//
// system should hold one role per turn; without (nil), the roles alternate back from a last user turn, as
// Context's.
func (f Format) History(turns []string, system []bool) string {
	if !f.Roles() {
		return strings.Join(turns, f.join())
	}
	if len(system) != len(turns) {
		system = alternating(len(turns), false)
	}
	var b strings.Builder
	for i, t := range turns {
		if i == 0 && !system[0] {
			b.WriteString(f.Sys + "  ")
		}
		role := f.Usr
		if system[i] {
			role = f.Sys
		}
		b.WriteString(role + " " + t + " ")
	}
	return strings.TrimSpace(b.String())
}

// Act writes a dialogue-act example's input as TOD-BERT's Dataset_dm does for --task=dm --task_name=sysact
// --example_type=turn: the history before the labelled system turn, then that turn, then the user turn
// that answers it. With role tokens, concat_dh_sys_usr's exact string:
//
//	history + " [SYS] " + " [SEP] " + sys + " [USR] " + usr
//
// (the role token of the system turn stands before the separator token, as in TOD-BERT's code). Without,
// the same turns joined with the separator. The tokenizer then keeps the latest tokens: TOD-BERT's
// preprocess keeps [CLS] and the last max_length−1 tokens. ok is false for an example TOD-BERT does not
// make: a system turn that ends its dialogue (no user turn answers it), or one whose text is empty
// (utils_general.py get_loader drops turn_sys == "" for the dm task).
func (f Format) Act(e sets.ActExample) (text string, ok bool) {
	n := len(e.History)
	if n == 0 || !e.Replied || e.History[n-1] == "" {
		return "", false
	}
	before, sys := e.History[:n-1], e.History[n-1]
	if !f.Roles() {
		return strings.Join(append(append([]string{}, e.History...), e.Reply), f.join()), true
	}
	system := e.System
	if len(system) != n {
		system = alternating(n, true)
	}
	h := ""
	if len(before) > 0 {
		h = f.History(before, system[:n-1])
	}
	return h + " " + f.Sys + " " + " " + f.Sep + " " + sys + " " + f.Usr + " " + e.Reply, true
}

// Context writes a retrieval query's dialogue context, whose last turn is the user's and whose turns
// alternate (MultiWOZ's, Ubuntu IRC's two-speaker conversations): roles counted back from the end.
func (f Format) Context(turns []string) string {
	return f.History(turns, alternating(len(turns), false))
}

// alternating returns n roles that alternate and end with the system's turn (lastSystem) or the user's.
func alternating(n int, lastSystem bool) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = ((n-1-i)%2 == 0) == lastSystem
	}
	return out
}
