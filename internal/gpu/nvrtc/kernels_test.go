package nvrtc_test

import (
	"bytes"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"convrep/internal/gpu/kernels"
	"convrep/internal/gpu/nvrtc"
)

// Every kernel of internal/gpu/kernels compiles for the A100 (compute_80) and the H100/H200 (compute_90), on any
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

// Every kernel keeps its values in registers on the A100 and the H100/H200: no spill to local memory and no
// stack frame (the row functions' chunk arrays are indexed by unrolled constants for this; a change that makes
// the compiler index one at run time moves it to local memory, and the kernel's bytes through DRAM). The log
// (go test -v) is each kernel's register report, which says how many rows the GPU keeps in flight: measured on
// an H200, the LayerNorm kernels ran at a quarter of its bandwidth with 77 and 126 registers a thread
// (docs/measuring.md).
func TestKernelsFitInRegisters(t *testing.T) {
	src := kernels.Source()
	for _, arch := range []int{80, 90} {
		t.Run("sm_"+strconv.Itoa(arch), func(t *testing.T) {
			usage, err := nvrtc.Resources(src, kernels.Name, arch)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range kernels.Entries {
				u, ok := usage[name]
				if !ok {
					t.Errorf("ptxas's report has no kernel %s", name)
					continue
				}
				if u.SpillBytes != 0 || u.StackBytes != 0 {
					t.Errorf("%s spills %d bytes to local memory with a %d-byte stack frame", name, u.SpillBytes, u.StackBytes)
				}
				t.Logf("%-30s %3d registers, %3d bytes of shared memory: %2d warps per SM", name, u.Registers, u.SharedBytes, u.WarpsPerSM())
			}
		})
	}
}
