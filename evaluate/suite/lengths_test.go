package suite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/internal/shared"
)

// The shares count by hand: BERT writes [CLS] … [SEP] around a text, and "the" and "hotel" are one word piece
// each in its vocabulary, so "the hotel" is 4 tokens and "the the the hotel" 6. A response file's queries and
// responses are counted apart.
func TestLengths(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	train := write("train.csv", "text,label\nthe hotel,a\nthe the the hotel,b\n")
	test := write("test.csv", "text,label\nhotel,a\nthe the the the the the hotel,b\n")
	model := shared.MustPath(t, "fixtures", "tiny-bert")
	for _, c := range []struct {
		name     string
		opts     LengthsOptions
		variants map[string]float64
	}{
		// texts of 4, 6, 3 and 9 tokens
		{"labelled texts", LengthsOptions{Data: Data{Train: train, Test: test}, Lengths: []int{3, 4, 6, 8, 9}},
			map[string]float64{"texts ≤ 3 tokens": 0.25, "texts ≤ 4 tokens": 0.5, "texts ≤ 6 tokens": 0.75, "texts ≤ 8 tokens": 0.75, "texts ≤ 9 tokens": 1}},
		// queries of 3 and 9 tokens, responses "a" and "b" of 3 each
		{"queries and responses", LengthsOptions{Data: Data{Test: test}, Response: true, Lengths: []int{3, 8}},
			map[string]float64{"queries ≤ 3 tokens": 0.5, "queries ≤ 8 tokens": 0.5, "responses ≤ 3 tokens": 1, "responses ≤ 8 tokens": 1}},
	} {
		o := c.opts
		o.Model = Model{Ref: model, Device: "cpu"}
		o.Data.TextColumn, o.Data.OOSLabel = "text", evaluate.OOSLabel
		o.Output = filepath.Join(dir, "lengths.json")
		if err := o.Run(context.Background(), zap.NewNop()); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		res, err := evaluate.ReadResult(o.Output)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, r := range res.Rows {
			got[r.Variant] = r.Mean
		}
		if len(got) != len(c.variants) {
			t.Errorf("%s: rows %v, want %v", c.name, got, c.variants)
		}
		for v, want := range c.variants {
			if got[v] != want {
				t.Errorf("%s: %s %v, want %v (notes %q)", c.name, v, got[v], want, res.Notes)
			}
		}
	}
}
