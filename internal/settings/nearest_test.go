package settings

import "testing"

func TestNearest(t *testing.T) {
	keys := []string{"batch_size", "epochs", "lr", "warmup_steps", "valid_share"}
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"batch_szie", "batch_size", true},
		{"Epoch", "epochs", true},
		{"warmup", "warmup_steps", false}, // half the letters missing: no guess
		{"lf", "lr", true},
		{"temperature", "", false},
		{"valid-share", "valid_share", true},
	} {
		got, ok := Nearest(c.in, keys)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("Nearest(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if _, ok := Nearest("x", nil); ok {
		t.Error("Nearest with no candidates is ok")
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"dse_suport", "dse_support", 1}, {"mien", "mine", 1}, {"ab", "ba", 1}} {
		if got := distance(c.a, c.b); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
