package torchbin

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"convrep/safetensors"
)

type manifest struct {
	Models map[string]struct {
		BinKeys           []string   `json:"bin_keys"`
		BinAliasedGroups  [][]string `json:"bin_aliased_groups"`
		LegacyRenamedKeys []string   `json:"legacy_renamed_keys"`
		SafetensorsKeys   []string   `json:"safetensors_keys"`
	} `json:"models"`
}

// legacyName maps a key to the Google-era LayerNorm names the legacy fixture uses.
func legacyName(k string) string {
	if s, ok := strings.CutSuffix(k, "LayerNorm.weight"); ok {
		return s + "LayerNorm.gamma"
	}
	if s, ok := strings.CutSuffix(k, "LayerNorm.bias"); ok {
		return s + "LayerNorm.beta"
	}
	return k
}

func TestFixtures(t *testing.T) {
	fx := fixtures(t)
	raw, err := os.ReadFile(filepath.Join(fx, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		model, file string
		legacyNames bool
	}{
		{"tiny-bert", "pytorch_model.bin", false},
		{"tiny-bert", "pytorch_model.legacy.bin", true},
		{"tiny-roberta", "pytorch_model.bin", false},
		{"tiny-distilbert", "pytorch_model.bin", false},
	}
	for _, tc := range tests {
		t.Run(tc.model+"/"+tc.file, func(t *testing.T) {
			man, ok := m.Models[tc.model]
			if !ok || len(man.BinKeys) == 0 {
				t.Fatalf("MANIFEST.json has no bin_keys for %s", tc.model)
			}
			// original returns the key a name had before the legacy renaming.
			original := map[string]string{}
			var want []string
			for _, k := range man.BinKeys {
				n := k
				if tc.legacyNames {
					n = legacyName(k)
				}
				original[n] = k
				want = append(want, n)
			}
			slices.Sort(want)
			if tc.legacyNames {
				var renamed []string
				for n, k := range original {
					if n != k {
						renamed = append(renamed, n)
					}
				}
				slices.Sort(renamed)
				if !slices.Equal(renamed, man.LegacyRenamedKeys) {
					t.Fatalf("renaming rule gives %v, MANIFEST says %v", renamed, man.LegacyRenamedKeys)
				}
			}

			got, err := ReadFile(filepath.Join(fx, tc.model, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, g := range got {
				names = append(names, g.Name)
			}
			if !slices.Equal(names, want) {
				t.Fatalf("keys (sorted):\n got %v\nwant %v", names, want)
			}

			ref, err := safetensors.ReadFile(filepath.Join(fx, tc.model, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			// twin maps each .bin key to the key holding its values in model.safetensors.
			twin := map[string]string{}
			for _, k := range man.BinKeys {
				twin[k] = k
			}
			for _, group := range man.BinAliasedGroups {
				var present string
				for _, k := range group {
					if _, ok := ref.Lookup(k); ok {
						present = k
					}
				}
				if present == "" {
					t.Fatalf("no key of aliased group %v is in model.safetensors", group)
				}
				for _, k := range group {
					twin[k] = present
				}
			}
			byName := map[string]safetensors.Tensor{}
			for _, g := range got {
				byName[g.Name] = g
				r, ok := ref.Lookup(twin[original[g.Name]])
				if !ok {
					t.Fatalf("%s: twin %q not in model.safetensors", g.Name, twin[original[g.Name]])
				}
				if g.DType != r.DType || !slices.Equal(g.Shape, r.Shape) {
					t.Errorf("%s: %s %v, model.safetensors has %s %v", g.Name, g.DType, g.Shape, r.DType, r.Shape)
				}
				if !bytes.Equal(g.Data, r.Data) {
					t.Errorf("%s: %d bytes differ from model.safetensors' %q", g.Name, len(g.Data), r.Name)
				}
			}
			// Tied names come out equal, each with its own copy.
			for _, group := range man.BinAliasedGroups {
				a, b := byName[maybeLegacy(group[0], tc.legacyNames)], byName[maybeLegacy(group[1], tc.legacyNames)]
				if !bytes.Equal(a.Data, b.Data) || len(a.Data) == 0 {
					t.Errorf("aliases %v differ or are empty", group)
				}
				if len(a.Data) > 0 && &a.Data[0] == &b.Data[0] {
					t.Errorf("aliases %v share memory", group)
				}
			}
		})
	}
}

func maybeLegacy(k string, legacy bool) string {
	if legacy {
		return legacyName(k)
	}
	return k
}
