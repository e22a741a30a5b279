package settings

import (
	"testing"

	"github.com/BurntSushi/toml"
)

func TestKeyLine(t *testing.T) {
	src := []byte(`name = "x"

[model]
backbone = "a"
"quoted" = 1

[[claim]]
id = "dse"
  [[claim.row]]
  task = "intent"
inline = { a = 1 }
`)
	for _, c := range []struct {
		key  toml.Key
		want int
	}{
		{toml.Key{"name"}, 1},
		{toml.Key{"model"}, 3},
		{toml.Key{"model", "backbone"}, 4},
		{toml.Key{"model", "quoted"}, 5},
		{toml.Key{"claim"}, 7},
		{toml.Key{"claim", "id"}, 8},
		{toml.Key{"claim", "row", "task"}, 10},
		{toml.Key{"claim", "row", "inline", "a"}, 0}, // inside an inline table: not found
		{toml.Key{"model", "missing"}, 0},
		{toml.Key{}, 0},
	} {
		if got := KeyLine(src, c.key); got != c.want {
			t.Errorf("KeyLine(%v) = %d, want %d", c.key, got, c.want)
		}
	}
}

func TestDecodeError(t *testing.T) {
	for _, c := range []struct {
		name, src, want string
	}{
		{"syntax", "a = 1\nb = = 2\n", "f.toml:2: "},
		{"type", "a = \"x\"\n", "f.toml:1: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v struct{ A int }
			_, err := toml.Decode(c.src, &v)
			if err == nil {
				t.Fatal("decoded")
			}
			got := DecodeError("f.toml", err).Error()
			if len(got) < len(c.want) || got[:len(c.want)] != c.want {
				t.Errorf("DecodeError = %q, want it to start with %q", got, c.want)
			}
		})
	}
}
