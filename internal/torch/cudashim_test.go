package torch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"convrep/internal/build/libtorch"
)

// The shim's CUDA-only code (kernels.cpp under CONVREP_CUDA: the fused kernels' autograd ops and launches)
// parses and type-checks against the libtorch headers this build uses, with stand-ins for the CUDA headers that
// a CPU machine lacks (testdata/cudamock). Without it that code would first compile on a lent GPU. A build with
// CUDA compiles the real thing, so there the check has nothing to add.
func TestCUDAShimParses(t *testing.T) {
	gxx := cpuGxx(t)
	flags, err := buildFlags("cgo_flags.go")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-std=c++17", "-fsyntax-only", "-Wall", "-Werror", "-DCONVREP_CUDA", "-Itestdata/cudamock"}, flags...)
	out, err := exec.Command(gxx, append(args, "kernels.cpp")...).CombinedOutput()
	if err != nil {
		t.Fatalf("g++ %s kernels.cpp: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// The whole shim, its CUDA code and its branches for libtorch 2.x included, type-checks against the headers of
// a CUDA build of libtorch 2.x (Debian trixie's 2.6 with CUDA 12.4, NCCL and Gloo, which the set-up fetches:
// internal/build/libtorch/cudaheaders.go), with the defines a CUDA build's set-up writes (CONVREP_CUDA, CONVREP_NCCL,
// CONVREP_GLOO) and convrep's code held to -Wall -Werror. TestCUDAShimParses holds kernels.cpp's CUDA code to
// the libtorch this build links; this holds every file to a CUDA libtorch 2.x, the one kind a CPU machine
// never compiles against. The files go through g++ as one translation unit (each one's own includes, in order),
// which parses libtorch's headers once: about 30 s, against 5 min file by file. kernels_stub.cpp stands in for
// kernels.cpp, attention.cpp and profile.cpp in -tags convrep_nokernels builds, so it goes on its own.
func TestCUDAShimCompilesOnLibtorch2(t *testing.T) {
	gxx := cpuGxx(t)
	include, ncclCode, err := libtorch.CUDAHeaders()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.cpp")
	if err != nil {
		t.Fatal(err)
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var unity strings.Builder
	var alone []string
	for _, f := range files {
		if f == "kernels_stub.cpp" {
			alone = append(alone, f)
			continue
		}
		fmt.Fprintf(&unity, "#include %q\n", filepath.Join(here, f))
	}
	all := filepath.Join(t.TempDir(), "shim_all.cpp")
	if err := os.WriteFile(all, []byte(unity.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-std=c++17", "-fsyntax-only", "-Wall", "-Werror", "-D_GLIBCXX_USE_CXX11_ABI=1",
		"-DCONVREP_CUDA", "-DCONVREP_NCCL", "-DCONVREP_GLOO", fmt.Sprintf("-DCONVREP_NCCL_LIB_VERSION_CODE=%d", ncclCode),
		"-isystem", include, "-isystem", filepath.Join(include, "torch", "csrc", "api", "include")}
	version := torchVersion(t, include)
	for _, src := range append([]string{all}, alone...) {
		out, err := exec.Command(gxx, append(args, src)...).CombinedOutput()
		if err != nil {
			t.Errorf("g++ %s %s (libtorch %s): %v\n%s", strings.Join(args, " "), src, version, err, out)
		}
	}
	t.Logf("%d files type-checked against libtorch %s with CUDA in %s", len(files), version, include)
}

// torchVersion is TORCH_VERSION of the headers in include.
func torchVersion(t *testing.T, include string) string {
	b, err := os.ReadFile(filepath.Join(include, "torch", "csrc", "api", "include", "torch", "version.h"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`#define TORCH_VERSION\s+(?:\\\s*)?"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s/torch/csrc/api/include/torch/version.h defines no TORCH_VERSION", include)
	}
	return string(m[1])
}

// internal/gpu/kernels/devcheck/check.cpp, the program scripts/gpu_check.sh builds on a GPU host to hold each kernel
// to its host build and time it, type-checks against the same CUDA's cuda.h and nvrtc.h, so that it first fails
// here, not in a lent GPU's minutes. (Here rather than in internal/gpu/kernels, whose tests cannot tell a CUDA build.)
func TestDevcheckCompiles(t *testing.T) {
	gxx := cpuGxx(t)
	include, _, err := libtorch.CUDAHeaders()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-std=c++17", "-fsyntax-only", "-Wall", "-Werror", "-isystem", include, "../gpu/kernels/devcheck/check.cpp"}
	if out, err := exec.Command(gxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("g++ %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// cpuGxx is the g++ that type-checks CUDA-only C++ on a machine without CUDA; the test skips on a build that
// compiled the shim with CUDA, which compiled (and gpu_check.sh runs) the real thing.
func cpuGxx(t *testing.T) string {
	t.Helper()
	if KernelsCompiled() {
		t.Skip("this build compiled the shim with CUDA itself")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Fatal("g++ is needed to build convrep: ", err)
	}
	return gxx
}

// buildFlags are the -I and -D flags of the #cgo CPPFLAGS and CXXFLAGS lines that cmd/setup wrote for this
// libtorch (cgo_flags.go), and of the environment's CGO_CPPFLAGS and CGO_CXXFLAGS; each -I folder is given as
// -isystem, so that -Werror holds convrep's code to its warnings and not libtorch's headers to theirs.
func buildFlags(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var fields []string
	for _, line := range strings.Split(string(data), "\n") {
		for _, directive := range []string{"// #cgo CPPFLAGS:", "// #cgo CXXFLAGS:"} {
			if rest, ok := strings.CutPrefix(line, directive); ok {
				fields = append(fields, strings.Fields(rest)...)
			}
		}
	}
	fields = append(fields, strings.Fields(os.Getenv("CGO_CPPFLAGS")+" "+os.Getenv("CGO_CXXFLAGS"))...)
	var flags []string
	for _, f := range fields {
		switch {
		case strings.HasPrefix(f, "-I") && len(f) > 2:
			flags = append(flags, "-isystem", f[2:])
		case strings.HasPrefix(f, "-D"):
			flags = append(flags, f)
		}
	}
	return flags, nil
}
