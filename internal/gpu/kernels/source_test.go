package kernels

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var entryRE = regexp.MustCompile(`extern "C" __global__ void (\w+)\(`)

// Entries and the program's extern "C" __global__ functions are the same set, read after the preprocessor has
// expanded the macros that define several entries at once.
func TestEntriesMatchSource(t *testing.T) {
	var defined []string
	for _, m := range entryRE.FindAllStringSubmatch(preprocessed(t), -1) {
		defined = append(defined, m[1])
	}
	for _, name := range Entries {
		if !slices.Contains(defined, name) {
			t.Errorf("Entries lists %s, which the source does not define as extern \"C\" __global__", name)
		}
	}
	for _, name := range defined {
		if !slices.Contains(Entries, name) {
			t.Errorf("the source defines extern \"C\" __global__ %s, which Entries does not list", name)
		}
	}
	if len(defined) != len(Entries) {
		t.Errorf("the source defines %d entries, Entries lists %d", len(defined), len(Entries))
	}
	for _, name := range Entries {
		if !strings.HasSuffix(name, "_f32") && !strings.HasSuffix(name, "_bf16") {
			t.Errorf("entry %s has neither suffix _f32 nor _bf16", name)
		}
	}
}

// NVRTC compiles the program with no include path, so no line of it may include anything, and every
// embedded file is part of it.
func TestSourceIsSelfContained(t *testing.T) {
	for i, line := range strings.Split(Source(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#include") {
			t.Errorf("source line %d includes a header: %s", i+1, line)
		}
	}
	embedded, err := fs.Glob(files, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range embedded {
		if !slices.Contains(Files, name) {
			t.Errorf("%s is embedded but Source leaves it out", name)
		}
	}
}

// deviceStandIns declares, for g++, what NVRTC provides built in, so that the device-only code (the block
// reduction and the entries) is at least parsed and type-checked on a machine without CUDA. It checks
// syntax and types only; the code is not run.
const deviceStandIns = `#include <cmath>
#define __CUDACC__ 1
#define __host__
#define __device__
#define __global__
#define __shared__ static
#define __forceinline__ inline
struct convrep_dim3 { unsigned int x, y, z; };
extern const convrep_dim3 threadIdx, blockIdx, blockDim, gridDim;
float __shfl_xor_sync(unsigned int mask, float v, int lane_mask);
void __syncthreads();
`

func TestSourceParsesAsCxx(t *testing.T) {
	if out, err := gxx(t, deviceStandIns, "-fsyntax-only", "-Wall", "-Wno-unknown-pragmas", "-Werror"); err != nil {
		t.Fatalf("g++ -fsyntax-only on Source() with device stand-ins: %v\n%s", err, out)
	}
}

// preprocessed is Source() after g++'s preprocessor, compiling for the device (__CUDACC__), __global__ and
// the rest kept as written.
func preprocessed(t *testing.T) string {
	out, err := gxx(t, "#define __CUDACC__ 1\n", "-E", "-P")
	if err != nil {
		t.Fatalf("g++ -E on Source(): %v\n%s", err, out)
	}
	return string(out)
}

// gxx runs g++ (C++17) with flags on Source() after prefix, returning what it printed (its errors after
// the rest); with no g++ on PATH (the cgo build needs one) the test is skipped.
func gxx(t *testing.T, prefix string, flags ...string) ([]byte, error) {
	path, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ on PATH")
	}
	src := filepath.Join(t.TempDir(), Name+".cpp")
	if err := os.WriteFile(src, []byte(prefix+Source()), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(path, append(append([]string{"-std=c++17"}, flags...), src)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return append(stdout.Bytes(), stderr.Bytes()...), err
}

var sourceOut = flag.String("source-out", "", "write Source() to this file (for devcheck/run.sh)")

// TestWriteSource writes Source() where -source-out says, for a check outside Go (devcheck/check.cpp).
func TestWriteSource(t *testing.T) {
	if *sourceOut == "" {
		t.Skip("no -source-out")
	}
	if err := os.WriteFile(*sourceOut, []byte(Source()), 0o644); err != nil {
		t.Fatal(err)
	}
}
