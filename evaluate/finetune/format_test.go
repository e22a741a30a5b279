package finetune

import (
	"fmt"
	"testing"

	"convrep/evaluate/sets"
)

// The wanted strings are what TOD-BERT's code builds for the same hand-made dialogues (github
// jasonwu0731/ToD-BERT: utils/utils_universal_act.py and utils/utils_multiwoz.py read_langs_turn make the
// (dialog_history, turn_sys, turn_usr) triples; utils/dataloader_dm.py Dataset_dm.get_concat_context and
// concat_dh_sys_usr write them; utils/utils_general.py get_loader drops turn_sys == ""), worked through by
// hand from that code.
func TestActInputIsTODBERTs(t *testing.T) {
	roles := Format{Sep: "[SEP]", Sys: "[SYS]", Usr: "[USR]"}
	plain := Format{Sep: "[SEP]"}
	// A system-first dialogue (DSTC2, GSIM): s0 u1 s2 u3 s4.
	sysFirst := []string{"hello, welcome", "cheap food", "what area?", "north", "bye"}
	sysRoles := []bool{true, false, true, false, true}
	// A user-first dialogue (MultiWOZ): u0 s1 u2 s3 u4.
	usrFirst := []string{"i need a hotel", "which area?", "north", "ok booked", "thanks"}
	usrRoles := []bool{false, true, false, true, false}
	at := func(turns []string, system []bool, i int) sets.ActExample {
		e := sets.ActExample{History: turns[:i+1], System: system[:i+1], Labels: []string{"x"}}
		if i+1 < len(turns) {
			e.Reply, e.Replied = turns[i+1], true
		}
		return e
	}
	for _, c := range []struct {
		name string
		f    Format
		e    sets.ActExample
		want string
		ok   bool
	}{
		{"first system turn", roles, at(sysFirst, sysRoles, 0), " [SYS]  [SEP] hello, welcome [USR] cheap food", true},
		{"second system turn", roles, at(sysFirst, sysRoles, 2), "[SYS] hello, welcome [USR] cheap food [SYS]  [SEP] what area? [USR] north", true},
		{"last system turn: no user answer, no example", roles, at(sysFirst, sysRoles, 4), "", false},
		{"user first: an empty system turn opens the history", roles, at(usrFirst, usrRoles, 1), "[SYS]  [USR] i need a hotel [SYS]  [SEP] which area? [USR] north", true},
		{"user first, later turn", roles, at(usrFirst, usrRoles, 3),
			"[SYS]  [USR] i need a hotel [SYS] which area? [USR] north [SYS]  [SEP] ok booked [USR] thanks", true},
		{"empty system utterance is dropped", roles, sets.ActExample{History: []string{"hi", ""}, System: []bool{false, true}, Reply: "bye", Replied: true}, "", false},
		{"without role tokens: the same turns joined with the separator", plain, at(usrFirst, usrRoles, 3),
			"i need a hotel [SEP] which area? [SEP] north [SEP] ok booked [SEP] thanks", true},
		{"no roles recorded: alternating back from the system turn", roles,
			sets.ActExample{History: []string{"i need a hotel", "which area?"}, Reply: "north", Replied: true}, "[SYS]  [USR] i need a hotel [SYS]  [SEP] which area? [USR] north", true},
	} {
		got, ok := c.f.Act(c.e)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %q (%v), want %q (%v)", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestActExamplesUseTheFormat(t *testing.T) {
	ex := []sets.ActExample{
		{History: []string{"hi", "hello"}, System: []bool{false, true}, Labels: []string{"greet"}, Reply: "a table", Replied: true},
		{History: []string{"hi", "hello", "a table", "bye"}, System: []bool{false, true, false, true}, Labels: []string{"bye", "greet"}}, // ends the dialogue
	}
	labels := []string{"bye", "greet"}
	got := ActExamples(ex, labels, Format{Sep: "[SEP]", Sys: "[SYS]", Usr: "[USR]"})
	if len(got) != 1 || got[0].Text != "[SYS]  [USR] hi [SYS]  [SEP] hello [USR] a table" || fmt.Sprint(got[0].Labels) != "[1]" {
		t.Errorf("act examples %+v", got)
	}
	// The probe's input is the context before the system turn (MGT §5.3), with roles where the model has them.
	probe := ContextActExamples(ex, labels, Format{Sep: "[SEP]", Sys: "[SYS]", Usr: "[USR]"})
	if len(probe) != 2 || probe[0].Text != "[SYS]  [USR] hi" || probe[1].Text != "[SYS]  [USR] hi [SYS] hello [USR] a table" || fmt.Sprint(probe[1].Labels) != "[0 1]" {
		t.Errorf("probe examples %+v", probe)
	}
	probe = ContextActExamples(ex, labels, Format{Sep: "[SEP]"})
	if probe[1].Text != "hi [SEP] hello [SEP] a table" {
		t.Errorf("probe without roles %q", probe[1].Text)
	}
}

// fakeTok keeps the listed strings whole and splits anything else into characters.
type fakeTok map[string]bool

func (f fakeTok) Tokenize(s string) ([]string, error) {
	if f[s] {
		return []string{s}, nil
	}
	var out []string
	for _, r := range s {
		out = append(out, string(r))
	}
	return out, nil
}

func TestNewFormatGivesRoleTokensOnlyToModelsWithThem(t *testing.T) {
	for _, c := range []struct {
		name  string
		tok   fakeTok
		roles bool
	}{
		{"TOD-BERT (both added)", fakeTok{"[SYS]": true, "[USR]": true}, true},
		{"BERT (neither)", fakeTok{}, false},
		{"only one", fakeTok{"[SYS]": true}, false},
	} {
		f := NewFormat(c.tok, "[SEP]")
		if f.Roles() != c.roles || f.Sep != "[SEP]" {
			t.Errorf("%s: %+v, want roles %v", c.name, f, c.roles)
		}
	}
	// A retrieval context ends with the user's turn; opening with one, it gets TOD-BERT's empty system turn.
	f := Format{Sep: "[SEP]", Sys: "[SYS]", Usr: "[USR]"}
	if got := f.Context([]string{"a", "b", "c"}); got != "[SYS]  [USR] a [SYS] b [USR] c" {
		t.Errorf("context %q", got)
	}
}
