package models

import (
	"os"
	"path/filepath"
	"testing"

	"convrep/internal/shared"
)

// FuzzParseConfig feeds config.json arbitrary bytes: no panic, and a config it accepts has a known family and
// sizes a model can be built with.
//
//	go test -run XXX -fuzz FuzzParseConfig -fuzztime 60s ./models
func FuzzParseConfig(f *testing.F) {
	for _, m := range []string{"tiny-bert", "tiny-roberta", "tiny-distilbert"} {
		b, err := os.ReadFile(filepath.Join(shared.MustPath(f, "fixtures", m), "config.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model_type": "bert", "hidden_size": -1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			return
		}
		if c.Family().Arch == "" || c.HiddenSize <= 0 || c.NumLayers <= 0 || c.NumHeads <= 0 || c.HiddenSize%c.NumHeads != 0 || c.VocabSize <= 0 {
			t.Errorf("accepted %+v", c)
		}
	})
}
