package torch

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The shim's CUDA-only code (kernels.cpp under CONVREP_CUDA: the fused kernels' autograd ops and launches)
// parses and type-checks against this machine's libtorch headers, with stand-ins for the CUDA headers that a
// CPU machine lacks (testdata/cudamock). Without it that code would first compile on a lent GPU. A build with
// CUDA compiles the real thing, so there the check has nothing to add.
func TestCUDAShimParses(t *testing.T) {
	if KernelsCompiled() {
		t.Skip("this build compiled kernels.cpp with CUDA itself")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Fatal("g++ is needed to build convrep: ", err)
	}
	args := []string{"-std=c++17", "-fsyntax-only", "-Wall", "-Werror", "-D_GLIBCXX_USE_CXX11_ABI=1", "-DCONVREP_CUDA",
		"-Itestdata/cudamock", "-I/usr/include/torch/csrc/api/include"}
	// The include paths the build itself is given (a libtorch outside /usr/include).
	for _, v := range []string{"CGO_CPPFLAGS", "CGO_CXXFLAGS"} {
		for _, f := range strings.Fields(os.Getenv(v)) {
			if strings.HasPrefix(f, "-I") {
				args = append(args, f)
			}
		}
	}
	out, err := exec.Command(gxx, append(args, "kernels.cpp")...).CombinedOutput()
	if err != nil {
		t.Fatalf("g++ -fsyntax-only -DCONVREP_CUDA kernels.cpp: %v\n%s", err, out)
	}
}
