package torchbin

import (
	"path/filepath"
	"testing"
)

// BenchmarkReadFixtures loads the fixtures' pytorch_model.bin files, the honest files the bounds must not slow.
//
//	go test -run XXX -bench ReadFixtures -benchtime 200x ./models/torchbin
func BenchmarkReadFixtures(b *testing.B) {
	for _, m := range []string{"tiny-bert", "tiny-roberta", "tiny-distilbert"} {
		path := filepath.Join(fixtures(b), m, "pytorch_model.bin")
		b.Run(m, func(b *testing.B) {
			for range b.N {
				if _, err := ReadFile(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
