package main

import (
	"os"
	"os/exec"
	"path/filepath"
)

// writeShimFlags gives internal/torch (convrep's own C++ shim) the same flags as gotch's wrappers, plus the
// collective backends its c10d part compiles: Gloo where its headers are found, NCCL in a CUDA build.
func writeShimFlags(root string, lt *libtorch) error {
	src := "// Code written by convrep's cmd/setup for libtorch " + lt.Version + ". DO NOT EDIT.\n\npackage torch\n\n" +
		cgoHeader(lt, distDefines(lt)) + distLibs(lt) + "import \"C\"\n"
	return os.WriteFile(filepath.Join(root, shimFlags), []byte(src), 0o644)
}

// distDefines selects the c10d backends the shim compiles.
func distDefines(lt *libtorch) string {
	var d string
	if lt.glooHeaders() {
		d += " -DCONVREP_GLOO"
	}
	if lt.CUDA {
		d += " -DCONVREP_NCCL"
		// c10d's NCCL headers include CUDA's runtime headers, which a libtorch folder does not carry.
		if dir := cudaInclude(); dir != "" {
			d += " -I" + dir
		}
	}
	return d
}

// cudaInclude is the CUDA toolkit's include folder: $CUDA_HOME's, else /usr/local/cuda's; "" when neither
// holds cuda_runtime_api.h.
func cudaInclude() string {
	for _, home := range []string{os.Getenv("CUDA_HOME"), "/usr/local/cuda"} {
		if home != "" && exists(filepath.Join(home, "include", "cuda_runtime_api.h")) {
			return filepath.Join(home, "include")
		}
	}
	return ""
}

// distLibs links Debian's shared Gloo: its libtorch_cpu calls into libgloo.so rather than carrying Gloo inside,
// and the shim's inline Gloo code needs the same library. An official libtorch carries Gloo in libtorch_cpu.
func distLibs(lt *libtorch) string {
	if lt.Debian && lt.glooHeaders() {
		return "// #cgo LDFLAGS: -lgloo\n"
	}
	return ""
}

// glooHeaders reports whether Gloo's headers, which c10d's ProcessGroupGloo.hpp includes, are installed.
func (lt *libtorch) glooHeaders() bool { return exists(filepath.Join(lt.Include, "gloo", "config.h")) }

// buildOnce compiles gotch's wrappers and the shim into Go's build cache (about two minutes cold on one core).
func buildOnce(root string) error {
	cmd := exec.Command("go", "build", "./internal/torch", gotchModule+"/ts", gotchModule+"/nn")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	println("setup: compiling gotch's C++ wrappers (a few minutes the first time)")
	return cmd.Run()
}
