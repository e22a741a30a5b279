package datasets

import "testing"

func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		" \t\r\n ":          "",
		"  a  b\n\nc \t":    "a b c",
		"no change":         "no change",
		"bad \xff utf8":     "bad \uFFFD utf8",
		"non\u00a0breaking": "non breaking",
	} {
		if got := cleanText(in); got != want {
			t.Errorf("cleanText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAddTurn(t *testing.T) {
	steps := []Turn{{User, "a"}, {User, " "}, {User, "b"}, {System, "c"}, {User, ""}, {System, "d\n"}, {User, "e"}}
	for _, c := range []struct {
		merge bool
		want  []Turn
	}{
		{false, []Turn{{User, "a"}, {User, "b"}, {System, "c"}, {System, "d"}, {User, "e"}}},
		{true, []Turn{{User, "a b"}, {System, "c d"}, {User, "e"}}},
	} {
		var ts []Turn
		for _, s := range steps {
			ts = addTurn(ts, s.Speaker, s.Text, c.merge)
		}
		got := Dialogue{Turns: ts}
		if !sameReadDialogues([]Dialogue{got}, []Dialogue{{Turns: c.want}}) {
			t.Errorf("merge=%v: %+v, want %+v", c.merge, ts, c.want)
		}
	}
}

func TestSpeakerOf(t *testing.T) {
	for _, c := range []struct {
		label string
		want  Speaker
		ok    bool
	}{
		{"USER", User, true}, {"user", User, true}, {"System", System, true}, {"bot", "", false}, {"", "", false},
	} {
		got, err := speakerOf(c.label, "user", "system")
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("speakerOf(%q) = %q, %v", c.label, got, err)
		}
	}
}
