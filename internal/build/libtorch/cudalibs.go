package libtorch

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// shimCUDALibs are the CUDA libraries the shim (internal/torch) calls into itself, beside libtorch_cuda.so and
// libc10_cuda.so, by the name prefix of libtorch_cuda.so's dependency on them. A library that libtorch only
// loads indirectly must still be on the link line once the shim calls it: ld refuses a symbol of a dependency's
// dependency ("DSO missing from command line"), which is how PyTorch 2.11's wheel failed to link on 2026-11-27.
var shimCUDALibs = []struct {
	prefix   string
	required bool
	why      string
}{
	// at::cuda::CUDAEvent's methods are inline in ATen/cuda/CUDAEvent.h and call cudaEventCreateWithFlags,
	// cudaEventRecord, cudaStreamWaitEvent and cudaEventDestroy (graph.cpp).
	{"libcudart", true, "the CUDA runtime, which graph.cpp's CUDA events call"},
	// c10d's NCCL headers (dist.cpp) may call NCCL inline; where NCCL is linked into libtorch_cuda.so (the
	// official zips) there is no separate library to link.
	{"libnccl", false, "NCCL, which c10d's headers may call inline"},
}

// systemCUDALibDirs are searched, after $CUDA_HOME's, for a CUDA library the dynamic loader does not find
// for libtorch_cuda.so (a libtorch built against a CUDA toolkit, with no RUNPATH to it).
var systemCUDALibDirs = []string{"/usr/local/cuda/lib64"}

// cudaLib is one of shimCUDALibs as this machine has it: the name libtorch_cuda.so needs (its soname, e.g.
// libcudart.so.13, or libcudart-6d56b25a.so.12 in a libtorch zip) and the file the dynamic loader resolves.
type cudaLib struct{ Name, Path string }

// findCUDALibs finds shimCUDALibs the way the dynamic loader finds them for libtorch_cuda.so in libDir
// (its RUNPATH: the wheel's nvidia/cu13/lib or nvidia/cuda_runtime/lib, the zip's own lib folder; then
// LD_LIBRARY_PATH and the loader's cache), and where the loader finds none, in $CUDA_HOME/lib64 and
// systemCUDALibDirs. A required library found nowhere is an error naming it and what to set.
func findCUDALibs(libDir string) ([]cudaLib, error) {
	cuda := filepath.Join(libDir, "libtorch_cuda.so")
	deps, err := neededLibraries(cuda)
	if err != nil {
		return nil, err
	}
	var libs []cudaLib
	for _, want := range shimCUDALibs {
		var dep *cudaLib
		for i := range deps {
			if strings.HasPrefix(deps[i].Name, want.prefix) {
				dep = &deps[i]
				break
			}
		}
		if dep == nil {
			if want.required {
				return nil, fmt.Errorf("%s needs no %s*.so (%s): cannot tell which CUDA runtime it loads", cuda, want.prefix, want.why)
			}
			continue
		}
		lib := *dep
		if lib.Path == "" {
			dirs := cudaLibDirs()
			for _, d := range dirs {
				if p := filepath.Join(d, lib.Name); exists(p) {
					lib.Path = p
					break
				}
			}
			if lib.Path == "" {
				if !want.required {
					continue // checkNCCL names it, where the build needs NCCL
				}
				return nil, fmt.Errorf("%s needs %s (%s), which the dynamic loader does not find, nor is it in %s: "+
					"set CUDA_HOME to the CUDA toolkit libtorch was built with, or add the folder holding %s to LD_LIBRARY_PATH",
					cuda, lib.Name, want.why, strings.Join(dirs, ", "), lib.Name)
			}
		}
		if err := checkLinkPath(filepath.Dir(lib.Path)); err != nil {
			return nil, err
		}
		libs = append(libs, lib)
	}
	return libs, nil
}

// checkLinkPath refuses a folder the link flags cannot carry: cgo splits its flags at spaces, and -Wl,-rpath,DIR
// splits DIR at commas.
func checkLinkPath(dir string) error {
	if strings.ContainsAny(dir, ", \t\n") {
		return fmt.Errorf("the folder %q holds a comma or a space, which the linker's flags (-L, -Wl,-rpath,) cannot carry: move it, or link it to a path without them", dir)
	}
	return nil
}

// cudaLibDirs are $CUDA_HOME/lib64 and $CUDA_HOME/lib, then systemCUDALibDirs.
func cudaLibDirs() []string {
	var dirs []string
	if home := os.Getenv("CUDA_HOME"); home != "" {
		dirs = append(dirs, filepath.Join(home, "lib64"), filepath.Join(home, "lib"))
	}
	return append(dirs, systemCUDALibDirs...)
}

// cudaLinkFlags links libs by the file the loader resolves: -L its folder and -l:its name, so that the
// executable needs the same soname libtorch_cuda.so needs, and a RUNPATH to the folder. They sit where ld
// links as needed: a library the shim does not call is not recorded.
func cudaLinkFlags(libs []cudaLib, libtorchDir string) string {
	var s string
	// findCUDALibs refused folders with a comma or a space (checkLinkPath).
	seen := map[string]bool{libtorchDir: true}
	for _, l := range libs {
		dir := filepath.Dir(l.Path)
		if !seen[dir] {
			seen[dir] = true
			s += fmt.Sprintf(" -L%s -Wl,-rpath,%s", dir, dir)
		}
		s += " -l:" + filepath.Base(l.Path)
	}
	return s
}

// neededLibraries lists lib's shared dependencies, direct and indirect, with the path the dynamic loader
// resolves for each (its RUNPATH, LD_LIBRARY_PATH and the loader's cache, as `ldd` reports them); Path is ""
// for one the loader does not find.
func neededLibraries(lib string) ([]cudaLib, error) {
	out, err := exec.Command("ldd", lib).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %v: %s", lib, err, Tail(string(out), 5))
	}
	var deps []cudaLib
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "\tlibnccl.so.2 => /x/nvidia/nccl/lib/libnccl.so.2 (0x...)" or "\tlibnccl.so.2 => not found"
		name, target, ok := strings.Cut(strings.TrimSpace(sc.Text()), " => ")
		if !ok {
			continue
		}
		path := ""
		if !strings.HasPrefix(target, "not found") {
			path, _, _ = strings.Cut(target, " (")
			path = filepath.Clean(path) // RUNPATH's $ORIGIN/../..: torch/lib/../../nvidia/cu13/lib
		}
		deps = append(deps, cudaLib{Name: name, Path: path})
	}
	return deps, nil
}

// nvrtcSonames are the NVRTC libraries internal/gpu/nvrtc dlopens, in its order.
var nvrtcSonames = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}

// nvrtcDir is the folder of the NVRTC that goes with a CUDA libtorch whose lib folder is libDir: NVIDIA's wheel
// beside torch (site-packages/nvidia/cu13/lib for CUDA 13, nvidia/cuda_nvrtc/lib for CUDA 12), else
// $CUDA_HOME's and systemCUDALibDirs; "" when none holds one, or its path cannot go on the link line.
// internal/gpu/nvrtc dlopens NVRTC by soname, so it is never linked: the folder only goes on convrep's RUNPATH,
// which dlopen searches for a call from the executable.
func nvrtcDir(libDir string) string {
	site := filepath.Dir(filepath.Dir(libDir))
	dirs := []string{filepath.Join(site, "nvidia", "cu13", "lib"), filepath.Join(site, "nvidia", "cuda_nvrtc", "lib")}
	for _, d := range append(dirs, cudaLibDirs()...) {
		for _, name := range nvrtcSonames {
			if exists(filepath.Join(d, name)) && checkLinkPath(d) == nil {
				return d
			}
		}
	}
	return ""
}

// nvrtcRpath puts lt.NVRTCDir on the RUNPATH, unless the flags already carry it (the cu13 wheel's one folder
// holds the CUDA runtime and NVRTC alike).
func nvrtcRpath(lt *Libtorch) string {
	if lt.NVRTCDir == "" || lt.NVRTCDir == lt.Lib {
		return ""
	}
	for _, l := range lt.CUDALibs {
		if filepath.Dir(l.Path) == lt.NVRTCDir {
			return ""
		}
	}
	return " -Wl,-rpath," + lt.NVRTCDir
}
