package objectives

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"convrep/models"
)

type fakeConfig struct{ name string }

func (f fakeConfig) Needs() Requirements { return Requirements{} }
func (f fakeConfig) Build(*models.Model) (Objective, error) {
	return nil, fmt.Errorf("built %s", f.name)
}

func fakeParser(name string) Parser {
	return func(Settings) (Config, error) { return fakeConfig{name}, nil }
}

func TestRegistry(t *testing.T) {
	r := &registry{parsers: map[string]Parser{}, papers: map[string]Paper{}}
	for _, tc := range []struct {
		name string
		p    Parser
		want string // "" when the registration is accepted
	}{
		{"Alpha", fakeParser("alpha"), ""},
		{"beta", fakeParser("beta"), ""},
		{"ALPHA", fakeParser("again"), "already taken"},
		{"  ", fakeParser("blank"), "empty"},
		{"gamma", nil, "nil parser"},
	} {
		err := r.register(tc.name, Paper{Title: tc.name}, tc.p)
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("register(%q): got %v, want %q", tc.name, err, tc.want)
		}
	}
	if got := r.names(); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Errorf("names() = %v", got)
	}
	// The refused registrations are reported by every Parse, so a clash in an init function is not lost.
	if _, err := r.parse(map[string]any{"name": "beta"}); err == nil || !strings.Contains(err.Error(), "already taken") || !strings.Contains(err.Error(), "nil parser") {
		t.Errorf("parse after refused registrations: got %v", err)
	}
	r.refused = nil
	c, err := r.parse(map[string]any{"name": " BETA "})
	if err != nil || c.(fakeConfig).name != "beta" {
		t.Errorf("parse(beta) = %v, %v", c, err)
	}
}

func TestSettingsReader(t *testing.T) {
	s := Settings{"f": 0.5, "i": int64(3), "whole": 4.0, "s": "x", "b": true, "extra": true, "other": 1}
	r := s.Reader()
	if v := r.Number("f", 0); v != 0.5 {
		t.Errorf("number(f) = %v", v)
	}
	if v := r.Number("i", 0); v != 3 {
		t.Errorf("number(i) = %v", v)
	}
	if v := r.Integer("whole", 0); v != 4 {
		t.Errorf("integer(whole) = %v", v)
	}
	if v := r.Text("s", ""); v != "x" {
		t.Errorf("text(s) = %v", v)
	}
	if v := r.Bool("b", false); !v {
		t.Errorf("bool(b) = %v", v)
	}
	if v := r.Bool("absent", true); !v {
		t.Errorf("bool(absent) = %v, want the default", v)
	}
	if v := r.Number("absent", 7); v != 7 {
		t.Errorf("number(absent) = %v, want the default", v)
	}
	err := r.Done()
	if err == nil || !strings.Contains(err.Error(), "extra, other") {
		t.Fatalf("done() = %v, want the unread keys named", err)
	}
	for _, tc := range []struct {
		s    Settings
		read func(*SettingsReader)
		want string
	}{
		{Settings{"k": "1"}, func(r *SettingsReader) { r.Number("k", 0) }, "k = 1 (string): want a number"},
		{Settings{"k": 1.5}, func(r *SettingsReader) { r.Integer("k", 0) }, "want a whole number"},
		{Settings{"k": 2}, func(r *SettingsReader) { r.Text("k", "") }, "want a string"},
		{Settings{"k": "true"}, func(r *SettingsReader) { r.Bool("k", false) }, "k = true (string): want true or false"},
	} {
		r := tc.s.Reader()
		tc.read(r)
		if err := r.Done(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.s, err, tc.want)
		}
	}
	if err := Settings(nil).Reader().Done(); err != nil {
		t.Errorf("nil settings: %v", err)
	}
}
