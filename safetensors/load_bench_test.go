package safetensors

import (
	"path/filepath"
	"testing"

	"convrep/internal/shared"
)

// BenchmarkReadFixtures loads the fixtures' model.safetensors files, the honest files the bounds must not slow.
//
//	go test -run XXX -bench ReadFixtures -benchtime 200x ./safetensors
func BenchmarkReadFixtures(b *testing.B) {
	for _, m := range []string{"tiny-bert", "tiny-roberta", "tiny-distilbert"} {
		path := filepath.Join(shared.MustPath(b, "fixtures", m), "model.safetensors")
		b.Run(m, func(b *testing.B) {
			for range b.N {
				if _, err := ReadFile(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
