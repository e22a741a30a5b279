package torch

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The shim's CUDA-only code (kernels.cpp under CONVREP_CUDA: the fused kernels' autograd ops and launches)
// parses and type-checks against the libtorch headers this build uses, with stand-ins for the CUDA headers that
// a CPU machine lacks (testdata/cudamock). Without it that code would first compile on a lent GPU. A build with
// CUDA compiles the real thing, so there the check has nothing to add.
func TestCUDAShimParses(t *testing.T) {
	if KernelsCompiled() {
		t.Skip("this build compiled kernels.cpp with CUDA itself")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Fatal("g++ is needed to build convrep: ", err)
	}
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
