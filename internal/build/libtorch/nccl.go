package libtorch

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// ncclVersion is an NCCL release, as nccl.h and the library itself state it.
type ncclVersion struct{ Major, Minor, Patch int }

func (v ncclVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// code is NCCL_VERSION_CODE as nccl.h's NCCL_VERSION(X, Y, Z) computes it (the old form below 2.9).
func (v ncclVersion) code() int {
	if v.Major <= 2 && v.Minor <= 8 {
		return v.Major*1000 + v.Minor*100 + v.Patch
	}
	return v.Major*10000 + v.Minor*100 + v.Patch
}

// ncclFacts is what the set-up found of NCCL for a CUDA libtorch: the header the shim compiles against and the
// library libtorch loads at run time.
type ncclFacts struct {
	Header, Lib   string
	HeaderV, LibV ncclVersion
	LibIsLibtorch bool // NCCL is linked into libtorch_cuda.so itself (the official libtorch zips)
}

// checkNCCL proves that nccl.h in headerDir is the NCCL release libtorch loads. ProcessGroupNCCL::Options
// holds an ncclConfig_t by value and its create() is inline (torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp):
// the shim allocates the object the size this nccl.h gives, libtorch's compiled constructor fills one the size
// of the NCCL it was built with, and ncclConfig_t grows between minor releases (2.17 to 2.18, 2.19 to 2.20...).
// So the major and minor releases must be equal; a patch release differs only in code. The library's release is
// read from the library itself (the "NCCL version X.Y.Z" string NCCL logs at init), found the way the dynamic
// loader finds it for libtorch_cuda.so; when libtorch carries NCCL linked in, from libtorch_cuda.so.
func checkNCCL(lt *Libtorch, headerDir string) (*ncclFacts, error) {
	f := &ncclFacts{Header: filepath.Join(headerDir, "nccl.h")}
	var err error
	if f.HeaderV, err = ncclHeaderVersion(f.Header); err != nil {
		return nil, err
	}
	cuda := filepath.Join(lt.Lib, "libtorch_cuda.so")
	if f.Lib, err = loadedLibrary(cuda, "libnccl.so"); err != nil {
		return nil, err
	}
	if f.Lib == "" {
		f.Lib, f.LibIsLibtorch = cuda, true
	}
	v, found, err := ncclLibraryVersion(f.Lib)
	if err != nil {
		return nil, err
	}
	if !found {
		if f.LibIsLibtorch {
			return nil, fmt.Errorf("libtorch_cuda.so in %s loads no libnccl.so and carries no NCCL version string: cannot tell which NCCL it was built with", lt.Lib)
		}
		return nil, fmt.Errorf("%s, the NCCL libtorch loads, carries no \"NCCL version X.Y.Z\" string: cannot tell its release", f.Lib)
	}
	f.LibV = v
	if f.HeaderV.Major != f.LibV.Major || f.HeaderV.Minor != f.LibV.Minor {
		return nil, fmt.Errorf("nccl.h is NCCL %s (%s) but libtorch %s loads NCCL %s (%s): ncclConfig_t differs between minor releases, "+
			"so the shim would build ProcessGroupNCCL's options with the wrong size; put the include folder of NCCL %d.%d first "+
			"(CGO_CPPFLAGS=-I<folder>; PyTorch's wheel carries it in site-packages/nvidia/nccl/include)",
			f.HeaderV, f.Header, lt.Version, f.LibV, f.Lib, f.LibV.Major, f.LibV.Minor)
	}
	return f, nil
}

var ncclDefineRe = regexp.MustCompile(`(?m)^#define NCCL_(MAJOR|MINOR|PATCH)\s+(\d+)`)

// ncclHeaderVersion reads NCCL_MAJOR, NCCL_MINOR and NCCL_PATCH from nccl.h.
func ncclHeaderVersion(path string) (ncclVersion, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ncclVersion{}, err
	}
	got := map[string]int{}
	for _, m := range ncclDefineRe.FindAllSubmatch(b, -1) {
		got[string(m[1])], _ = strconv.Atoi(string(m[2]))
	}
	for _, k := range []string{"MAJOR", "MINOR", "PATCH"} {
		if _, ok := got[k]; !ok {
			return ncclVersion{}, fmt.Errorf("%s defines no NCCL_%s: not an nccl.h", path, k)
		}
	}
	return ncclVersion{got["MAJOR"], got["MINOR"], got["PATCH"]}, nil
}

// loadedLibrary is the path the dynamic loader resolves for lib's dependency whose name starts with prefix
// (neededLibraries), "" when lib needs no such library.
func loadedLibrary(lib, prefix string) (string, error) {
	deps, err := neededLibraries(lib)
	if err != nil {
		return "", err
	}
	for _, d := range deps {
		if !strings.HasPrefix(d.Name, prefix) {
			continue
		}
		if d.Path == "" {
			return "", fmt.Errorf("%s needs %s, which the dynamic loader does not find (add its folder to LD_LIBRARY_PATH)", lib, d.Name)
		}
		return d.Path, nil
	}
	return "", nil
}

var ncclStringRe = regexp.MustCompile(`NCCL version (\d+)\.(\d+)\.(\d+)`)

// ncclLibraryVersion finds the first "NCCL version X.Y.Z" string in a library (NCCL's init.cc builds it from
// the release's NCCL_MAJOR/MINOR/PATCH), reading in bounded chunks: libnccl is hundreds of megabytes.
func ncclLibraryVersion(path string) (ncclVersion, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return ncclVersion{}, false, err
	}
	defer f.Close()
	const chunk, overlap = 1 << 20, 64
	buf := make([]byte, chunk+overlap)
	kept := 0
	for {
		n, err := io.ReadFull(f, buf[kept:])
		if m := ncclStringRe.FindSubmatch(buf[:kept+n]); m != nil {
			var v [3]int
			for i := range v {
				v[i], _ = strconv.Atoi(string(m[i+1]))
			}
			return ncclVersion{v[0], v[1], v[2]}, true, nil
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return ncclVersion{}, false, nil
		}
		if err != nil {
			return ncclVersion{}, false, fmt.Errorf("read %s: %w", path, err)
		}
		kept = copy(buf, buf[kept+n-overlap:kept+n])
	}
}
