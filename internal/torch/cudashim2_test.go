package torch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"convrep/internal/libtorch"
)

// The whole shim, its CUDA code and its branches for libtorch 2.x included, type-checks against the headers of
// a CUDA build of libtorch 2.x (Debian trixie's 2.6 with CUDA 12.4, NCCL and Gloo, which the set-up fetches:
// internal/libtorch/cudaheaders.go), with the defines a CUDA build's set-up writes (CONVREP_CUDA, CONVREP_NCCL,
// CONVREP_GLOO) and convrep's code held to -Wall -Werror. TestCUDAShimParses holds kernels.cpp's CUDA code to
// the libtorch this build links; this holds every file to a CUDA libtorch 2.x, the one kind a CPU machine
// never compiles against. The files go through g++ as one translation unit (each one's own includes, in order),
// which parses libtorch's headers once: about 30 s, against 5 min file by file. kernels_stub.cpp stands in for
// kernels.cpp, attention.cpp and profile.cpp in -tags convrep_nokernels builds, so it goes on its own.
func TestCUDAShimCompilesOnLibtorch2(t *testing.T) {
	if KernelsCompiled() {
		t.Skip("this build compiled the shim with CUDA itself")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Fatal("g++ is needed to build convrep: ", err)
	}
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

// internal/kernels/devcheck/check.cpp, the program scripts/gpu_check.sh builds on a GPU host to hold each kernel
// to its host build and time it, type-checks against the same CUDA's cuda.h and nvrtc.h, so that it first fails
// here, not in a lent GPU's minutes. (Here rather than in internal/kernels, whose tests cannot tell a CUDA build.)
func TestDevcheckCompiles(t *testing.T) {
	if KernelsCompiled() {
		t.Skip("a CUDA build: scripts/gpu_check.sh compiles and runs the program itself")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Fatal("g++ is needed to build convrep: ", err)
	}
	include, _, err := libtorch.CUDAHeaders()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-std=c++17", "-fsyntax-only", "-Wall", "-Werror", "-isystem", include, "../kernels/devcheck/check.cpp"}
	if out, err := exec.Command(gxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("g++ %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
