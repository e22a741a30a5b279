// Package libtorch finds the libtorch convrep builds against ($LIBTORCH, a Python's torch, or Debian's
// libtorch-dev, installed with apt-get when allowed), with what the build needs to know of it: its version,
// C++ standard and ABI, CUDA, NCCL (nccl.go), the CUDA libraries the shim links (cudalibs.go) and NVRTC
// (nvrtc.go); it writes the cgo flags of convrep's shim (shim.go) and checks a CUDA build (cudacheck.go). It
// imports the standard library only: the set-up (cmd/setup) builds it before vendor/ exists.
package libtorch

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// Libtorch is the C++ library the build compiles and links against.
type Libtorch struct {
	Include string // the folder holding ATen/, c10/ and torch/
	Lib     string // the folder holding libtorch.so
	Debian  bool   // headers in the system include path (never passed with -I: it breaks #include_next)
	CUDA    bool   // libtorch_cuda.so is present
	ABI     int    // _GLIBCXX_USE_CXX11_ABI of the library
	Std     string // the C++ standard its headers demand: c++17, or c++20 from libtorch 2.13 on
	Version string
	From    string     // how it was found, for the set-up's report
	NCCL    *ncclFacts // for a CUDA libtorch, after distDefines
	// CUDALibs are the CUDA libraries the shim calls, for a CUDA libtorch: linked by the files
	// libtorch_cuda.so loads (cudalibs.go).
	CUDALibs []cudaLib
	// NVRTCDir is the folder of the NVRTC that goes with a CUDA libtorch, put on convrep's RUNPATH so that
	// internal/gpu/nvrtc's dlopen finds it ("" for none: the loader's own search applies; cudalibs.go).
	NVRTCDir string
}

// Find takes $LIBTORCH when set, else Debian's libtorch-dev, installing it when allowed. $LIBTORCH
// names a libtorch folder (include/, lib/: the zip from PyTorch's site, or an installed PyTorch's torch folder,
// which has the same layout), or a Python interpreter whose torch package is then used (LIBTORCH=python3).
func Find(install bool) (*Libtorch, error) {
	if val := os.Getenv("LIBTORCH"); val != "" {
		dir, from, err := libtorchDir(val)
		if err != nil {
			return nil, fmt.Errorf("LIBTORCH=%s: %w", val, err)
		}
		lt := &Libtorch{Include: filepath.Join(dir, "include"), Lib: filepath.Join(dir, "lib"), From: from}
		if err := lt.check(); err != nil {
			return nil, fmt.Errorf("LIBTORCH=%s: %w", val, err)
		}
		return lt, lt.inspect()
	}
	lt := &Libtorch{Include: "/usr/include", Lib: debianLibDir(), Debian: true, From: "Debian's libtorch-dev"}
	// Debian's libtorch links the generic libblas.so.3, which without OpenBLAS is the reference BLAS:
	// matrix products ran about 12 times slower with it (measured on the encoder benchmark).
	openblas := filepath.Join(lt.Lib, "openblas-pthread", "libblas.so.3")
	// oneDNN's header lets internal/torch call the inner product of the libdnnl.so.2 that libtorch loads, on
	// weights laid out for it once (mkldnn.cpp); without it, inference runs libtorch's mkldnn_linear.
	dnnl := "/usr/include/oneapi/dnnl/dnnl.h"
	if lt.check() != nil || !exists("/usr/include/gloo/config.h") || !exists(openblas) || !exists(dnnl) {
		if !install {
			return nil, fmt.Errorf("libtorch not found in %s and %s, or OpenBLAS or oneDNN's header missing: install Debian's libtorch-dev, libgloo-dev, libopenblas0-pthread and libdnnl-dev, or set LIBTORCH", lt.Include, lt.Lib)
		}
		if err := aptInstall("libtorch-dev", "libgloo-dev", "libopenblas0-pthread", "libdnnl-dev"); err != nil {
			return nil, err
		}
		if err := lt.check(); err != nil {
			return nil, fmt.Errorf("after apt-get install libtorch-dev: %w", err)
		}
	}
	return lt, lt.inspect()
}

func (lt *Libtorch) check() error {
	for _, f := range []string{
		filepath.Join(lt.Include, "torch/csrc/api/include/torch/version.h"),
		filepath.Join(lt.Include, "ATen/ATen.h"),
		filepath.Join(lt.Lib, "libtorch.so"),
		filepath.Join(lt.Lib, "libc10.so"),
	} {
		if !exists(f) {
			return fmt.Errorf("%s is missing", f)
		}
	}
	return nil
}

// libtorchDir resolves $LIBTORCH: a folder is taken as it is; anything else must be a Python interpreter (a
// name on PATH or a path) whose `import torch` names the folder. from says which, for the report.
func libtorchDir(val string) (dir, from string, err error) {
	if st, err := os.Stat(val); err == nil && st.IsDir() {
		return val, "LIBTORCH=" + val, nil
	}
	py, err := exec.LookPath(val)
	if err != nil {
		return "", "", fmt.Errorf("neither a libtorch folder nor a Python interpreter: %w", err)
	}
	out, err := exec.Command(py, "-c", "import os, torch; print(os.path.dirname(torch.__file__)); print(torch.__version__)").Output()
	if err != nil {
		detail := ""
		if ee, ok := err.(*exec.ExitError); ok {
			detail = ": " + Tail(string(ee.Stderr), 3)
		}
		return "", "", fmt.Errorf("%s cannot import torch (%v)%s", py, err, detail)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 || !filepath.IsAbs(lines[0]) {
		return "", "", fmt.Errorf("%s printed %q for torch's folder and version", py, out)
	}
	return lines[0], fmt.Sprintf("torch %s of %s", strings.TrimSpace(lines[1]), py), nil
}

var versionRe = regexp.MustCompile(`#define TORCH_VERSION_(MAJOR|MINOR|PATCH) (\d+)`)

// inspect reads the version from the headers, and the C++ ABI from libc10's symbols: a library built with
// the new ABI exports names mangled with __cxx11.
func (lt *Libtorch) inspect() error {
	// From about libtorch 2.9 the api folder's version.h only includes torch/headeronly/version.h, which
	// holds the numbers (PyTorch 2.11's wheel is laid out so).
	parts := map[string]string{}
	for _, h := range []string{"torch/csrc/api/include/torch/version.h", "torch/headeronly/version.h"} {
		b, err := os.ReadFile(filepath.Join(lt.Include, h))
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		for _, m := range versionRe.FindAllStringSubmatch(string(b), -1) {
			parts[m[1]] = m[2]
		}
	}
	if len(parts) != 3 {
		return fmt.Errorf("no TORCH_VERSION_MAJOR, _MINOR and _PATCH in %s's torch/csrc/api/include/torch/version.h or torch/headeronly/version.h", lt.Include)
	}
	lt.Version = fmt.Sprintf("%s.%s.%s", parts["MAJOR"], parts["MINOR"], parts["PATCH"])
	var err error
	lt.CUDA = exists(filepath.Join(lt.Lib, "libtorch_cuda.so"))
	if err := checkLinkPath(lt.Lib); err != nil {
		return err
	}
	if lt.CUDA {
		if lt.CUDALibs, err = findCUDALibs(lt.Lib); err != nil {
			return err
		}
		lt.NVRTCDir = nvrtcDir(lt.Lib)
	}
	c10, err := os.ReadFile(filepath.Join(lt.Lib, "libc10.so"))
	if err != nil {
		return err
	}
	if bytes.Contains(c10, []byte("__cxx11")) {
		lt.ABI = 1
	}
	lt.Std, err = cxxStandard(lt.Include)
	return err
}

// cxxStandard is the C++ standard libtorch's headers demand. ATen.h and torch/all.h refuse older compilers
// with `#if !defined(_MSC_VER) && __cplusplus < 201703L` (C++17 up to 2.12, 202002L from 2.13 on), so the
// highest such bound in them is the standard to compile with; C++17 when none is found (1.13's ATen.h
// asks for C++14, but gotch's wrappers need 17).
func cxxStandard(include string) (string, error) {
	best := 201703
	for _, h := range []string{"ATen/ATen.h", "torch/csrc/api/include/torch/all.h", "c10/macros/Macros.h"} {
		b, err := os.ReadFile(filepath.Join(include, h))
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return "", err
		}
		for _, m := range cplusplusRe.FindAllSubmatch(b, -1) {
			if v, _ := strconv.Atoi(string(m[1])); v > best {
				best = v
			}
		}
	}
	std, ok := map[int]string{201703: "c++17", 202002: "c++20", 202302: "c++23"}[best]
	if !ok {
		return "", fmt.Errorf("libtorch's headers in %s demand __cplusplus >= %dL, a standard this set-up does not know", include, best)
	}
	return std, nil
}

var cplusplusRe = regexp.MustCompile(`__cplusplus\s*<\s*(\d{6})L`)

// debianLibDir is the multiarch library folder, e.g. /usr/lib/x86_64-linux-gnu.
func debianLibDir() string {
	if out, err := exec.Command("gcc", "-print-multiarch").Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
		return filepath.Join("/usr/lib", string(bytes.TrimSpace(out)))
	}
	arch := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	return filepath.Join("/usr/lib", arch)
}

func aptInstall(pkgs ...string) error {
	var prefix []string
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("sudo"); err != nil {
			return fmt.Errorf("libtorch is missing and this user cannot install it: as root run `apt-get install %v`, or set LIBTORCH", pkgs)
		}
		prefix = []string{"sudo"}
	}
	apt := func(args ...string) error {
		argv := append(append(prefix, "apt-get"), args...)
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("%v: %w", argv, err)
		}
		return nil
	}
	fmt.Printf("setup: installing %v with apt-get\n", pkgs)
	install := append([]string{"install", "-y", "-q", "--no-install-recommends"}, pkgs...)
	if apt(install...) == nil {
		return nil
	}
	// A fresh machine may have stale or no package lists.
	if err := apt("update", "-q"); err != nil {
		return err
	}
	return apt(install...)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Report is the set-up's one line on what it builds against.
func (lt *Libtorch) Report() string {
	s := fmt.Sprintf("CUDA %s", yesNo(lt.CUDA))
	if n := lt.NCCL; n != nil {
		lib := n.Lib
		if n.LibIsLibtorch {
			lib += ", linked in"
		}
		s += fmt.Sprintf(", NCCL %s (library %s; header %s, NCCL %s)", n.LibV, lib, n.Header, n.HeaderV)
	} else if lt.CUDA {
		s += ", NCCL none"
	}
	for _, l := range lt.CUDALibs {
		s += fmt.Sprintf(", links %s", l.Path)
	}
	if lt.NVRTCDir != "" {
		s += fmt.Sprintf(", NVRTC from %s (run path)", lt.NVRTCDir)
	}
	return s + fmt.Sprintf(", C++ standard %s, C++11 ABI %d", lt.Std, lt.ABI)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Tail is the last n lines of a tool's output s, for an error message.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
