package libtorch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// wantError checks err against a table case: with parts, an error holding each of them; without, none. It
// reports whether the case goes on to check a result.
func wantError(t *testing.T, err error, parts []string) bool {
	t.Helper()
	if parts == nil {
		if err != nil {
			t.Fatal(err)
		}
		return true
	}
	if err == nil {
		t.Fatalf("no error, want one naming %q", parts)
	}
	for _, w := range parts {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	return false
}

// ncclHeader is a stand-in nccl.h defining what the real one (2.9 and later) does about its release.
func ncclHeader(v ncclVersion) string {
	return fmt.Sprintf("#define NCCL_MAJOR %d\n#define NCCL_MINOR %d\n#define NCCL_PATCH %d\n#define NCCL_SUFFIX \"\"\n"+
		"#define NCCL_VERSION_CODE %d\n", v.Major, v.Minor, v.Patch, v.code())
}

// How a stand-in libtorch carries NCCL.
type ncclLayout int

const (
	ncclLinkedIn ncclLayout = iota // inside libtorch_cuda.so, as in the official libtorch 2.1 zip
	ncclWheel                      // libnccl.so.2 of NVIDIA's wheel beside torch/, found through libtorch_cuda.so's RUNPATH
	ncclNoString                   // a libnccl.so.2 that states no release
	ncclMissing                    // libtorch_cuda.so needs a libnccl.so.2 the loader cannot find
)

// standInLibtorchCUDA builds, with the C compiler cgo uses, a real shared libtorch_cuda.so in torchDir/lib that
// carries or loads NCCL as layout says, and returns the lib folder. The libraries hold nothing but the version
// string NCCL's init.cc builds ("NCCL version X.Y.Z+cudaA.B"). Its CUDA runtime is laid out as in the official
// zip where NCCL is linked in, else as in PyTorch 2.11's wheel (standInCUDA).
func standInLibtorchCUDA(t *testing.T, torchDir string, layout ncclLayout, v ncclVersion) string {
	rt := cudartWheel13
	if layout == ncclLinkedIn {
		rt = cudartZip
	}
	lib, _ := standInCUDA(t, torchDir, layout, v, rt)
	return lib
}

// buildShared compiles C source src into the shared library out with the C compiler cgo uses.
func buildShared(t *testing.T, out, src string, args ...string) {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatal("gcc is needed (cgo compiles with it)")
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(t.TempDir(), "x.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cc, append([]string{"-shared", "-fPIC", "-o", out, c}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
}

// standInCUDA builds libtorch_cuda.so in torchDir/lib (torchDir being site-packages/torch for the wheel
// layouts), loading NCCL as nccl says and a stand-in CUDA runtime laid out as rt says, which defines
// cudaStreamWaitEvent, the symbol the 2026-11-27 link missed. It returns the lib folder, and the CUDA toolkit
// folder for cudartCUDAHome ("" otherwise).
func standInCUDA(t *testing.T, torchDir string, nccl ncclLayout, v ncclVersion, rt cudartLayout) (lib, cudaHome string) {
	t.Helper()
	lib = filepath.Join(torchDir, "lib")
	site := filepath.Dir(torchDir)
	ncclLib := filepath.Join(site, "nvidia", "nccl", "lib")
	versionC := fmt.Sprintf("const char convrep_nccl_version[] = \"NCCL version %s+cuda13.0\";\n", v)
	src := "int convrep_torch_cuda(void) { return 1; }\n"
	var args, runpath []string
	switch nccl {
	case ncclLinkedIn:
		src += versionC
	case ncclWheel:
		buildShared(t, filepath.Join(ncclLib, "libnccl.so.2"), versionC+"int ncclGetVersion(int *v) { *v = 1; return 0; }\n", "-Wl,-soname,libnccl.so.2")
	case ncclNoString, ncclMissing:
		buildShared(t, filepath.Join(ncclLib, "libnccl.so.2"), "int ncclGetVersion(int *v) { *v = 1; return 0; }\n", "-Wl,-soname,libnccl.so.2")
	}
	if nccl != ncclLinkedIn {
		src += "int ncclGetVersion(int *);\nint convrep_use(void) { int v; return ncclGetVersion(&v); }\n"
		args = append(args, "-L"+ncclLib, "-l:libnccl.so.2")
		runpath = append(runpath, "$ORIGIN/../../nvidia/nccl/lib")
	}
	rtDir, rtName, rtRunpath := rt.where(lib, site)
	if rt == cudartCUDAHome {
		cudaHome = filepath.Dir(rtDir)
	}
	buildShared(t, filepath.Join(rtDir, rtName), "int cudaStreamWaitEvent(void *s, void *e, unsigned f) { return 0; }\n", "-Wl,-soname,"+rtName)
	src += "int cudaStreamWaitEvent(void *, void *, unsigned);\nint convrep_wait(void) { return cudaStreamWaitEvent(0, 0, 0); }\n"
	args = append(args, "-L"+rtDir, "-l:"+rtName)
	if rtRunpath != "" {
		runpath = append(runpath, rtRunpath)
	}
	if len(runpath) > 0 {
		args = append(args, "-Wl,--enable-new-dtags,-rpath,"+strings.Join(runpath, ":"))
	}
	buildShared(t, filepath.Join(lib, "libtorch_cuda.so"), src, args...)
	if nccl == ncclMissing {
		if err := os.Remove(filepath.Join(ncclLib, "libnccl.so.2")); err != nil {
			t.Fatal(err)
		}
	}
	if rt == cudartMissing {
		if err := os.Remove(filepath.Join(rtDir, rtName)); err != nil {
			t.Fatal(err)
		}
	}
	return lib, cudaHome
}

// checkNCCL accepts nccl.h only where its major and minor release equal those of the NCCL libtorch loads: the
// official 2.1 zip (NCCL 2.18 linked in), PyTorch 2.11's wheel (libnccl.so.2 2.28 of nvidia-nccl beside it,
// nccl.h found in its include folder), a patch release apart, and refuses a mismatch naming both releases.
func TestCheckNCCL(t *testing.T) {
	for _, tc := range []struct {
		name    string
		layout  ncclLayout
		lib     ncclVersion
		header  ncclVersion
		wheelH  bool // nccl.h in site-packages/nvidia/nccl/include, else in $CUDA_HOME/include
		libEnds string
		err     []string
	}{
		{name: "libtorch 2.1 zip, NCCL 2.18.1 linked in", layout: ncclLinkedIn, lib: ncclVersion{2, 18, 1}, header: ncclVersion{2, 18, 1},
			libEnds: "/torch/lib/libtorch_cuda.so"},
		{name: "PyTorch 2.11 wheel, NCCL 2.28.9, header from the wheel", layout: ncclWheel, lib: ncclVersion{2, 28, 9}, header: ncclVersion{2, 28, 9}, wheelH: true,
			libEnds: "/nvidia/nccl/lib/libnccl.so.2"},
		{name: "a patch release apart", layout: ncclWheel, lib: ncclVersion{2, 28, 9}, header: ncclVersion{2, 28, 3},
			libEnds: "/nvidia/nccl/lib/libnccl.so.2"},
		{name: "mismatch: header 2.27.7, library 2.28.9", layout: ncclWheel, lib: ncclVersion{2, 28, 9}, header: ncclVersion{2, 27, 7},
			err: []string{"nccl.h is NCCL 2.27.7", "loads NCCL 2.28.9", "libnccl.so.2", "CGO_CPPFLAGS"}},
		{name: "mismatch: libtorch 2.1 with nccl.h 2.17.1", layout: ncclLinkedIn, lib: ncclVersion{2, 18, 1}, header: ncclVersion{2, 17, 1},
			err: []string{"nccl.h is NCCL 2.17.1", "loads NCCL 2.18.1", "libtorch_cuda.so"}},
		{name: "library states no release", layout: ncclNoString, lib: ncclVersion{2, 28, 9}, header: ncclVersion{2, 28, 9},
			err: []string{"carries no \"NCCL version X.Y.Z\" string"}},
		{name: "library not found", layout: ncclMissing, lib: ncclVersion{2, 28, 9}, header: ncclVersion{2, 28, 9},
			err: []string{"needs libnccl.so.2", "LD_LIBRARY_PATH"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noSystemHeaders(t)
			site := t.TempDir()
			torchDir := filepath.Join(site, "torch")
			lt := &Libtorch{Include: filepath.Join(torchDir, "include"), Lib: standInLibtorchCUDA(t, torchDir, tc.layout, tc.lib), CUDA: true, Version: "2.11.0"}
			if err := os.MkdirAll(lt.Include, 0o755); err != nil {
				t.Fatal(err)
			}
			hdir := filepath.Join(site, "nvidia", "nccl", "include")
			if !tc.wheelH {
				home := headersIn(t)
				t.Setenv("CUDA_HOME", home)
				hdir = filepath.Join(home, "include")
			}
			if err := os.MkdirAll(hdir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, body := range map[string]string{"nccl.h": ncclHeader(tc.header), "cuda_runtime_api.h": ""} {
				if err := os.WriteFile(filepath.Join(hdir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			defines, err := distDefines(lt)
			if !wantError(t, err, tc.err) {
				return
			}
			if want := fmt.Sprintf("-DCONVREP_NCCL_LIB_VERSION_CODE=%d", tc.lib.code()); !strings.Contains(defines, want) {
				t.Errorf("defines %q lack %s", defines, want)
			}
			if !strings.Contains(defines, "-I"+hdir) {
				t.Errorf("defines %q lack -I%s", defines, hdir)
			}
			if lt.NCCL == nil || lt.NCCL.LibV != tc.lib || lt.NCCL.HeaderV != tc.header || !strings.HasSuffix(lt.NCCL.Lib, tc.libEnds) {
				t.Errorf("found %+v, want library %s at …%s, header %s", lt.NCCL, tc.lib, tc.libEnds, tc.header)
			}
			if r := lt.Report(); !strings.Contains(r, "NCCL "+tc.lib.String()) || !strings.Contains(r, "CUDA yes") {
				t.Errorf("report %q", r)
			}
		})
	}
}

// The version string is found wherever it lies in the file, also across the boundary of two read chunks.
func TestNCCLLibraryVersionAcrossChunks(t *testing.T) {
	for _, at := range []int{0, 1<<20 - 10, 1<<20 + 30, 3<<20 - 5} {
		p := filepath.Join(t.TempDir(), "lib.so")
		b := make([]byte, 3<<20+100)
		copy(b[at:], "NCCL version 2.28.9+cuda13.0")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		v, ok, err := ncclLibraryVersion(p)
		if err != nil || !ok || v != (ncclVersion{2, 28, 9}) {
			t.Errorf("at %d: %v %v %v", at, v, ok, err)
		}
	}
}

// NCCL_VERSION_CODE as nccl.h computes it: the old form up to 2.8.
func TestNCCLVersionCode(t *testing.T) {
	for _, c := range []struct {
		v    ncclVersion
		want int
	}{{ncclVersion{2, 8, 4}, 2804}, {ncclVersion{2, 18, 1}, 21801}, {ncclVersion{2, 28, 9}, 22809}} {
		if got := c.v.code(); got != c.want {
			t.Errorf("%s: %d, want %d", c.v, got, c.want)
		}
	}
}

// LIBTORCH=python3 takes the torch folder the interpreter imports; a folder is taken as it is; anything else is
// refused, naming the value. The interpreter here is a stand-in script answering as python3 -c would.
func TestLibtorchFromPython(t *testing.T) {
	torchDir := fakeLibtorch(t, false, false, true)
	bin := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\necho %s\necho 2.11.0+cu130\n", torchDir)
	if err := os.WriteFile(filepath.Join(bin, "python3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	broken := "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "python-notorch"), []byte(broken), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, tc := range []struct {
		val, from string
		err       []string
	}{
		{val: "python3", from: "torch 2.11.0+cu130 of " + filepath.Join(bin, "python3")},
		{val: filepath.Join(bin, "python3"), from: "torch 2.11.0+cu130 of " + filepath.Join(bin, "python3")},
		{val: torchDir, from: "LIBTORCH=" + torchDir},
		{val: "python-notorch", err: []string{"LIBTORCH=python-notorch", "cannot import torch", "No module named 'torch'"}},
		{val: "no-such-python", err: []string{"LIBTORCH=no-such-python", "neither a libtorch folder nor a Python interpreter"}},
	} {
		t.Run(tc.val, func(t *testing.T) {
			t.Setenv("LIBTORCH", tc.val)
			lt, err := Find(false)
			if !wantError(t, err, tc.err) {
				return
			}
			if lt.From != tc.from || lt.Lib != filepath.Join(torchDir, "lib") || lt.Std != "c++17" {
				t.Errorf("found %+v, want from %q, lib %s, c++17", lt, tc.from, filepath.Join(torchDir, "lib"))
			}
		})
	}
}

// The C++ standard is the highest __cplusplus bound libtorch's headers demand: 1.13 (C++14 in ATen.h) and 2.1 to
// 2.12 (C++17) compile as C++17, 2.13 on (C++20) as C++20.
func TestCXXStandard(t *testing.T) {
	for _, tc := range []struct{ aten, want, err string }{
		{"#if !defined(_MSC_VER) && __cplusplus < 201402L\n#error C++14 or later compatible compiler is required to use ATen.\n#endif\n", "c++17", ""},
		{"#if !defined(_MSC_VER) && __cplusplus < 201703L\n#error C++17 or later compatible compiler is required to use ATen.\n#endif\n", "c++17", ""},
		{"#if !defined(_MSC_VER) && __cplusplus < 202002L\n#error C++20 or later compatible compiler is required to use ATen.\n#endif\n", "c++20", ""},
		{"#pragma once\n", "c++17", ""},
		{"#if __cplusplus < 202612L\n#error\n#endif\n", "", "202612L"},
	} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "ATen"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ATen/ATen.h"), []byte(tc.aten), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := cxxStandard(dir)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %q, %v; want an error naming %s", tc.aten, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %s", tc.aten, got, err, tc.want)
		}
		lt := &Libtorch{Include: dir, Std: got}
		if _, cxx, _ := CgoFlags(lt); !strings.HasPrefix(cxx, "-std="+tc.want+" ") {
			t.Errorf("CXXFLAGS %q do not start with -std=%s", cxx, tc.want)
		}
	}
}

// The version is read from torch/version.h, or from torch/headeronly/version.h where the first only includes
// the second (PyTorch 2.11's wheel); a libtorch stating none is refused.
func TestLibtorchVersionHeaders(t *testing.T) {
	for _, tc := range []struct{ name, api, headeronly, want string }{
		{"api folder (1.13 and 2.1)", "#define TORCH_VERSION_MAJOR 2\n#define TORCH_VERSION_MINOR 1\n#define TORCH_VERSION_PATCH 0\n", "", "2.1.0"},
		{"headeronly (2.11)", "#pragma once\n#include <torch/headeronly/version.h>\n", "#define TORCH_VERSION_MAJOR 2\n#define TORCH_VERSION_MINOR 11\n#define TORCH_VERSION_PATCH 0\n", "2.11.0"},
		{"none", "#pragma once\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeLibtorch(t, false, false, true)
			inc := filepath.Join(dir, "include")
			if err := os.WriteFile(filepath.Join(inc, "torch/csrc/api/include/torch/version.h"), []byte(tc.api), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.headeronly != "" {
				if err := os.MkdirAll(filepath.Join(inc, "torch/headeronly"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(inc, "torch/headeronly/version.h"), []byte(tc.headeronly), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("LIBTORCH", dir)
			lt, err := Find(false)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "headeronly/version.h") {
					t.Fatalf("found %+v, %v; want an error naming the headers", lt, err)
				}
				return
			}
			if err != nil || lt.Version != tc.want {
				t.Fatalf("version %v, %v; want %s", lt, err, tc.want)
			}
		})
	}
}
