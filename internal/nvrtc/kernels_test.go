package nvrtc_test

import (
	"bytes"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"convrep/internal/kernels"
	"convrep/internal/nvrtc"
)

// Every kernel of internal/kernels compiles for the A100 (compute_80) and the H100/H200 (compute_90), on any
// machine: NVRTC needs no GPU. A kernel that breaks, or an entry that Entries names and the program lacks,
// fails make test here rather than a GPU run; a missing NVRTC fails too (`go run ./cmd/setup` installs it).
func TestKernelsCompile(t *testing.T) {
	src := kernels.Source()
	for _, arch := range []int{80, 90} {
		t.Run("sm_"+strconv.Itoa(arch), func(t *testing.T) {
			ptx, err := nvrtc.Compile(src, kernels.Name, arch)
			if err != nil {
				t.Fatal(err)
			}
			if want := ".target sm_" + strconv.Itoa(arch); !bytes.Contains(ptx, []byte(want)) {
				t.Errorf("the PTX lacks %q", want)
			}
			entries := map[string]bool{}
			for _, m := range entryRe.FindAllSubmatch(ptx, -1) {
				entries[string(m[1])] = true
			}
			for _, name := range kernels.Entries {
				if !entries[name] {
					t.Errorf("the PTX has no .entry %s (its entries: %v)", name, slices.Sorted(maps.Keys(entries)))
				}
			}
		})
	}
}

// entryRe finds a kernel's name in PTX: ".visible .entry convrep_bias_gelu_fwd_f32(".
var entryRe = regexp.MustCompile(`\.entry\s+([A-Za-z_][A-Za-z0-9_$]*)\s*\(`)
