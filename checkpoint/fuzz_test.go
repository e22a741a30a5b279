package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRead feeds Read whole checkpoint files, metadata and tensors alike: no panic, a refusal names the file,
// and what it accepts has a position inside the run.
//
//	go test -run XXX -fuzz FuzzRead -fuzztime 60s ./checkpoint
func FuzzRead(f *testing.F) {
	p := filepath.Join(f.TempDir(), "seed.safetensors")
	if err := Write(p, sample()); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "step-000000015.safetensors")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Read(p)
		if err != nil {
			if !strings.Contains(err.Error(), p) && !strings.Contains(err.Error(), "checkpoint") {
				t.Errorf("error %q names neither the file nor the checkpoint", err)
			}
			return
		}
		if c.Meta.Position.Step < 0 || c.Meta.Position.Epoch < 0 || c.Meta.Position.Batch < 0 || len(c.RNG) == 0 || len(c.RNG[0].CPU) == 0 {
			t.Errorf("accepted %+v", c.Meta)
		}
	})
}
