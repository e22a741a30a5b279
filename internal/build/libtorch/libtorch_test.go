package libtorch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeLibtorch lays out an official libtorch folder (as the zip from PyTorch's site unpacks) with empty
// libraries: enough for findLibtorch, which reads only the version header and libc10's symbol names.
func fakeLibtorch(t *testing.T, cuda, gloo, cxx11 bool) string {
	t.Helper()
	dir := t.TempDir()
	c10 := "\x7fELF...c10::Error::Error"
	if cxx11 {
		c10 += " _ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE"
	}
	files := map[string]string{
		"include/torch/csrc/api/include/torch/version.h": "#pragma once\n#define TORCH_VERSION_MAJOR 2\n#define TORCH_VERSION_MINOR 1\n#define TORCH_VERSION_PATCH 0\n#define TORCH_VERSION \"2.1.0\"\n",
		"include/ATen/ATen.h":                            "#pragma once\n",
		"lib/libtorch.so":                                "\x7fELF",
		"lib/libtorch_cpu.so":                            "\x7fELF",
		"lib/libc10.so":                                  c10,
	}
	if cuda {
		standInLibtorchCUDA(t, dir, ncclLinkedIn, ncclVersion{2, 18, 1}) // as the official 2.1.0+cu121 zip
		files["lib/libc10_cuda.so"] = "\x7fELF"
	}
	if gloo {
		files["include/gloo/config.h"] = "#pragma once\n#define GLOO_HAVE_TRANSPORT_TCP 1\n"
	}
	writeFiles(t, dir, files)
	return dir
}

// writeFiles writes each file's body under dir, making its folders.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOfficialLibtorchFlags follows the set-up tool's path for LIBTORCH=<official libtorch folder>, the path the
// Dockerfile takes, from discovery to the shim's cgo file, without touching the repository's own cgo_flags.go.
func TestOfficialLibtorchFlags(t *testing.T) {
	for _, tc := range []struct {
		name             string
		cuda, gloo, abi1 bool
		want, wantNot    []string
	}{
		{
			name: "CUDA with Gloo headers (the Docker image)", cuda: true, gloo: true, abi1: true,
			want: []string{"-D_GLIBCXX_USE_CXX11_ABI=1", "-DCONVREP_GLOO", "-DCONVREP_CUDA", "-DCONVREP_NCCL", "-DCONVREP_NCCL_LIB_VERSION_CODE=21801",
				"-ltorch -ltorch_cpu -lc10 -ltorch_cuda -lc10_cuda", "-Wl,--no-as-needed"},
			wantNot: []string{"-lgloo", "-I/usr/include "},
		},
		{
			name: "CUDA without Gloo headers", cuda: true, abi1: true,
			want:    []string{"-DCONVREP_CUDA", "-DCONVREP_NCCL", "-ltorch_cuda -lc10_cuda"},
			wantNot: []string{"-DCONVREP_GLOO", "-lgloo"},
		},
		{
			name: "CPU with Gloo headers", gloo: true, abi1: true,
			want:    []string{"-D_GLIBCXX_USE_CXX11_ABI=1", "-DCONVREP_GLOO", "-ltorch -ltorch_cpu -lc10 -Wl,--as-needed"},
			wantNot: []string{"-DCONVREP_CUDA", "-DCONVREP_NCCL", "-ltorch_cuda", "-lc10_cuda", "-lgloo"},
		},
		{
			name: "CPU with the pre-cxx11 ABI", gloo: false, abi1: false,
			want:    []string{"-D_GLIBCXX_USE_CXX11_ABI=0"},
			wantNot: []string{"-DCONVREP_CUDA", "-DCONVREP_NCCL", "-DCONVREP_GLOO", "-ltorch_cuda"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeLibtorch(t, tc.cuda, tc.gloo, tc.abi1)
			t.Setenv("LIBTORCH", dir)
			noSystemHeaders(t)
			t.Setenv("CUDA_HOME", headersIn(t, "cuda_runtime_api.h", "nccl.h"))
			lt, err := Find(false)
			if err != nil {
				t.Fatalf("findLibtorch: %v", err)
			}
			inc, lib := filepath.Join(dir, "include"), filepath.Join(dir, "lib")
			wantABI := map[bool]int{true: 1, false: 0}[tc.abi1]
			if lt.Include != inc || lt.Lib != lib || lt.Debian || lt.CUDA != tc.cuda || lt.ABI != wantABI || lt.Version != "2.1.0" {
				t.Fatalf("found %+v, want include %s, lib %s, not Debian, CUDA %v, ABI %d, version 2.1.0", lt, inc, lib, tc.cuda, wantABI)
			}

			cpp, cxx, ld := CgoFlags(lt)
			for _, w := range []string{"-I" + filepath.Join(inc, "torch/csrc/api/include"), "-I" + inc} {
				if !strings.Contains(cxx+" ", w+" ") {
					t.Errorf("CXXFLAGS %q lack %s", cxx, w)
				}
			}
			for _, w := range []string{"-L" + lib, "-Wl,-rpath," + lib} {
				if !strings.Contains(ld+" ", w+" ") {
					t.Errorf("LDFLAGS %q lack %s", ld, w)
				}
			}
			if cpp != "-D_GLIBCXX_USE_CXX11_ABI="+map[bool]string{true: "1", false: "0"}[tc.abi1] {
				t.Errorf("CPPFLAGS %q", cpp)
			}

			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "internal/torch"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := WriteShimFlags(root, lt); err != nil {
				t.Fatalf("writeShimFlags: %v", err)
			}
			b, err := os.ReadFile(filepath.Join(root, ShimFlags))
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			for _, w := range append(tc.want, "package torch", "import \"C\"", "for libtorch 2.1.0", "-Wl,-rpath,"+lib) {
				if !strings.Contains(src, w) {
					t.Errorf("%s lacks %q:\n%s", ShimFlags, w, src)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(src, w) {
					t.Errorf("%s holds %q:\n%s", ShimFlags, w, src)
				}
			}
			// The defines must sit in CPPFLAGS: cgo passes CFLAGS to C files only, and the shim is C++.
			for _, line := range strings.Split(src, "\n") {
				if strings.Contains(line, "CONVREP_") && !strings.HasPrefix(line, "// #cgo CPPFLAGS:") {
					t.Errorf("define outside CPPFLAGS: %q", line)
				}
			}
			// gotch's lib.go gets the same link line as the shim.
			if h := CgoHeader(lt, " -I${SRCDIR}"); !strings.Contains(h, ld) || !strings.Contains(h, "-I${SRCDIR}") {
				t.Errorf("gotch's cgo header %q lacks the link flags %q", h, ld)
			}
		})
	}
}

// TestOfficialLibtorchMissingFiles: a LIBTORCH folder that is not a libtorch is refused, naming the missing file.
func TestOfficialLibtorchMissingFiles(t *testing.T) {
	for _, missing := range []string{"include/ATen/ATen.h", "lib/libc10.so", "lib/libtorch.so", "include/torch/csrc/api/include/torch/version.h"} {
		t.Run(missing, func(t *testing.T) {
			dir := fakeLibtorch(t, true, true, true)
			if err := os.Remove(filepath.Join(dir, missing)); err != nil {
				t.Fatal(err)
			}
			t.Setenv("LIBTORCH", dir)
			_, err := Find(false)
			if err == nil || !strings.Contains(err.Error(), filepath.Base(missing)) || !strings.Contains(err.Error(), "LIBTORCH="+dir) {
				t.Fatalf("err = %v, want one naming LIBTORCH=%s and %s", err, dir, filepath.Base(missing))
			}
		})
	}
}
