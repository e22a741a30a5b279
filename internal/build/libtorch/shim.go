package libtorch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ShimFlags is the file of internal/torch's cgo flags, relative to the repository.
const ShimFlags = "internal/torch/cgo_flags.go"

// WriteShimFlags gives internal/torch (convrep's own C++ shim) the same flags as gotch's wrappers, plus the
// collective backends its c10d part compiles: Gloo where its headers are found, NCCL in a CUDA build whose
// NCCL and CUDA runtime headers are found; CONVREP_CUDA (graph.cpp's CUDA graphs) in that same build.
func WriteShimFlags(root string, lt *Libtorch) error {
	defines, err := distDefines(lt)
	if err != nil {
		return err
	}
	src := "// Code written by convrep's cmd/setup for libtorch " + lt.Version + ". DO NOT EDIT.\n\npackage torch\n\n" +
		CgoHeader(lt, defines) + distLibs(lt) + "import \"C\"\n"
	return os.WriteFile(filepath.Join(root, ShimFlags), []byte(src), 0o644)
}

// distDefines selects the c10d backends the shim compiles. A CUDA libtorch gets NCCL only when the headers
// c10d's NCCL code includes are there: nccl.h, and CUDA's runtime API (neither ships in a libtorch folder);
// without them the set-up stops, naming the missing header and what to set, rather than leave the compiler
// to fail deep inside c10d, or a build without NCCL to fail at the first run. nccl.h must also be the release
// of the NCCL libtorch loads (checkNCCL); that release goes to nccl_check.h, which repeats the check at
// compile time. What was found is kept in lt.NCCL for the report.
func distDefines(lt *Libtorch) (string, error) {
	var d string
	if lt.glooHeaders() {
		d += " -DCONVREP_GLOO"
	}
	if !lt.CUDA {
		return d, nil
	}
	dirs := includeDirs(lt)
	// CUDA graphs (graph.cpp) need the CUDA runtime's headers as NCCL does.
	d += " -DCONVREP_CUDA -DCONVREP_NCCL"
	added := map[string]bool{lt.Include: true, "/usr/include": true} // never -I/usr/include: it breaks #include_next
	found := map[string]string{}
	for _, h := range []struct{ name, fix string }{
		{"cuda_runtime_api.h", "set CUDA_HOME to the CUDA toolkit whose include/ holds it, or add -I<folder> to CGO_CPPFLAGS"},
		{"nccl.h", "install the nccl.h of the NCCL this libtorch loads (PyTorch's wheel carries it as nvidia-nccl-cu12/cu13; libnccl-dev=2.18.1-1+cuda12.1 for libtorch 2.1.0+cu121), or add -I<folder> to CGO_CPPFLAGS"},
	} {
		dir := findHeader(h.name, dirs)
		if dir == "" {
			return "", fmt.Errorf("libtorch in %s is a CUDA build, so the shim compiles c10d's NCCL backend, but %s is in none of %s: %s",
				lt.Lib, h.name, strings.Join(dirs, ", "), h.fix)
		}
		found[h.name] = dir
		if !added[dir] {
			d += " -I" + dir
			added[dir] = true
		}
	}
	nccl, err := checkNCCL(lt, found["nccl.h"])
	if err != nil {
		return "", err
	}
	lt.NCCL = nccl
	return d + fmt.Sprintf(" -DCONVREP_NCCL_LIB_VERSION_CODE=%d", nccl.LibV.code()), nil
}

// systemIncludeDirs are searched after the folders the environment names and PyTorch's wheel folders.
var systemIncludeDirs = []string{"/usr/local/cuda/include", "/usr/include"}

// includeDirs lists, in order, where a CUDA build looks for nccl.h and cuda_runtime_api.h: libtorch's include
// folder, $CUDA_HOME/include, the -I folders of $CGO_CPPFLAGS, the include folders of NVIDIA's wheels beside
// an installed PyTorch's torch folder (site-packages/nvidia/nccl/include, nvidia/cuda_runtime/include for
// CUDA 12, nvidia/cu13/include for CUDA 13: the headers of the very libraries that torch loads), then
// systemIncludeDirs.
func includeDirs(lt *Libtorch) []string {
	dirs := []string{lt.Include}
	if home := os.Getenv("CUDA_HOME"); home != "" {
		dirs = append(dirs, filepath.Join(home, "include"))
	}
	fields := strings.Fields(os.Getenv("CGO_CPPFLAGS"))
	for i := 0; i < len(fields); i++ {
		switch f := fields[i]; {
		case f == "-I" && i+1 < len(fields):
			dirs = append(dirs, fields[i+1])
			i++
		case strings.HasPrefix(f, "-I") && len(f) > 2:
			dirs = append(dirs, f[2:])
		}
	}
	dirs = append(dirs, wheelIncludeDirs(filepath.Dir(lt.Include))...)
	var out []string
	seen := map[string]bool{}
	for _, d := range append(dirs, systemIncludeDirs...) {
		if d = filepath.Clean(d); !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// wheelIncludeDirs are the include folders of NVIDIA's wheels installed beside a torch folder
// (site-packages/torch and site-packages/nvidia/*/include), NCCL's first; none for another libtorch.
func wheelIncludeDirs(torchDir string) []string {
	site := filepath.Dir(torchDir)
	var dirs []string
	for _, pattern := range []string{"nvidia/nccl/include", "nvidia/*/include", "nvidia/*/*/include"} {
		m, _ := filepath.Glob(filepath.Join(site, pattern))
		dirs = append(dirs, m...)
	}
	return dirs
}

// findHeader is the first of dirs that holds the file name, "" if none does.
func findHeader(name string, dirs []string) string {
	for _, d := range dirs {
		if exists(filepath.Join(d, name)) {
			return d
		}
	}
	return ""
}

// distLibs links Debian's shared Gloo: its libtorch_cpu calls into libgloo.so rather than carrying Gloo inside,
// and the shim's inline Gloo code needs the same library. An official libtorch carries Gloo in libtorch_cpu.
func distLibs(lt *Libtorch) string {
	if lt.Debian && lt.glooHeaders() {
		return "// #cgo LDFLAGS: -lgloo\n"
	}
	return ""
}

// glooHeaders reports whether Gloo's headers, which c10d's ProcessGroupGloo.hpp includes, are installed.
func (lt *Libtorch) glooHeaders() bool { return exists(filepath.Join(lt.Include, "gloo", "config.h")) }

// CgoFlags are the compiler and linker flags for code that includes libtorch's C++ headers.
// cgo passes CPPFLAGS to C++ files, CFLAGS only to C files: the ABI define must be in CPPFLAGS.
func CgoFlags(lt *Libtorch) (cppflags, cxxflags, ldflags string) {
	cppflags = fmt.Sprintf("-D_GLIBCXX_USE_CXX11_ABI=%d", lt.ABI)
	std := lt.Std
	if std == "" {
		std = "c++17"
	}
	cxxflags = "-std=" + std + " -O1 -w -I" + filepath.Join(lt.Include, "torch/csrc/api/include")
	if !lt.Debian {
		cxxflags += " -I" + lt.Include
	}
	libs := "-ltorch -ltorch_cpu -lc10"
	if lt.CUDA {
		libs += " -ltorch_cuda -lc10_cuda"
	}
	ldflags = fmt.Sprintf("-L%s -Wl,-rpath,%s -Wl,--no-as-needed %s -Wl,--as-needed%s -lstdc++", lt.Lib, lt.Lib, libs, cudaLinkFlags(lt.CUDALibs, lt.Lib)+nvrtcRpath(lt))
	return cppflags, cxxflags, ldflags
}

// CgoHeader is the comment block of a cgo file carrying the flags above; extraCPP goes to C and C++ alike
// (cgo compiles the preambles of Go files as C, with CPPFLAGS and CFLAGS only).
func CgoHeader(lt *Libtorch, extraCPP string) string {
	cpp, cxx, ld := CgoFlags(lt)
	return fmt.Sprintf("// #cgo CPPFLAGS: %s%s\n// #cgo CXXFLAGS: %s\n// #cgo LDFLAGS: %s\n", cpp, extraCPP, cxx, ld)
}
