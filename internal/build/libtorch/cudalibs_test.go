package libtorch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Where a stand-in CUDA runtime lies, and how libtorch_cuda.so finds it.
type cudartLayout int

const (
	cudartZip      cudartLayout = iota // lib/libcudart-6d56b25a.so.12 beside libtorch_cuda.so, RUNPATH $ORIGIN (libtorch zips)
	cudartWheel13                      // site-packages/nvidia/cu13/lib/libcudart.so.13 (PyTorch 2.11's cu130 wheel)
	cudartWheel12                      // site-packages/nvidia/cuda_runtime/lib/libcudart.so.12 (the cu12x wheels)
	cudartCUDAHome                     // a toolkit's lib64/libcudart.so.12, no RUNPATH to it: found through $CUDA_HOME
	cudartMissing                      // libtorch_cuda.so needs a libcudart.so.12 that is nowhere
)

// where is the stand-in runtime's folder, its file name (and soname), and the RUNPATH entry of
// libtorch_cuda.so that reaches it ("" for none), for a libtorch whose lib folder is lib in site.
func (l cudartLayout) where(lib, site string) (dir, name, runpath string) {
	switch l {
	case cudartZip:
		return lib, "libcudart-6d56b25a.so.12", "$ORIGIN"
	case cudartWheel13:
		return filepath.Join(site, "nvidia", "cu13", "lib"), "libcudart.so.13", "$ORIGIN/../../nvidia/cu13/lib"
	case cudartWheel12:
		return filepath.Join(site, "nvidia", "cuda_runtime", "lib"), "libcudart.so.12", "$ORIGIN/../../nvidia/cuda_runtime/lib"
	case cudartCUDAHome:
		return filepath.Join(filepath.Dir(site), "cuda-12.1", "lib64"), "libcudart.so.12", ""
	default:
		return filepath.Join(filepath.Dir(site), "removed", "lib64"), "libcudart.so.12", ""
	}
}

// linkableLibtorch lays out a CUDA libtorch in site/torch whose libraries are all real shared objects, so that a
// program can be linked against it with the set-up's flags and run.
func linkableLibtorch(t *testing.T, nccl ncclLayout, rt cudartLayout) (torchDir, cudaHome string) {
	t.Helper()
	torchDir = filepath.Join(t.TempDir(), "site-packages", "torch")
	lib, cudaHome := standInCUDA(t, torchDir, nccl, ncclVersion{2, 28, 9}, rt)
	for _, name := range []string{"libtorch", "libtorch_cpu", "libc10", "libc10_cuda"} {
		buildShared(t, filepath.Join(lib, name+".so"), "int convrep_"+name+"(void) { return 0; }\n")
	}
	for name, body := range map[string]string{
		"torch/csrc/api/include/torch/version.h": "#define TORCH_VERSION_MAJOR 2\n#define TORCH_VERSION_MINOR 11\n#define TORCH_VERSION_PATCH 0\n",
		"ATen/ATen.h":                            "#pragma once\n",
	} {
		p := filepath.Join(torchDir, "include", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return torchDir, cudaHome
}

// linkAndRun links a program that calls the CUDA runtime directly, as graph.cpp's CUDA events do, with ldflags,
// and runs it with no LD_LIBRARY_PATH: what the build of every command does with the set-up's flags.
func linkAndRun(t *testing.T, ldflags string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.c")
	body := "int cudaStreamWaitEvent(void *, void *, unsigned);\nint main(void) { return cudaStreamWaitEvent(0, 0, 0); }\n"
	if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "prog")
	if out, err := exec.Command("gcc", append([]string{"-o", prog, src}, strings.Fields(ldflags)...)...).CombinedOutput(); err != nil {
		return string(out), err
	}
	run := exec.Command(prog)
	run.Env = append(os.Environ(), "LD_LIBRARY_PATH=")
	out, err := run.CombinedOutput()
	return string(out), err
}

// The set-up links the CUDA runtime (and NCCL, where it is a library of its own) by the file the dynamic loader
// resolves for libtorch_cuda.so, in each layout libtorch comes in; the program then links and runs. The link
// line without them fails as on the H200 on 2026-11-27 ("DSO missing from command line"; for a runtime only
// $CUDA_HOME holds, an undefined reference), so the stand-ins reproduce that failure.
func TestCUDALibsLinkAsTheLoaderFinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		nccl ncclLayout
		rt   cudartLayout
		want []string // the linked files, by the end of their paths
		err  []string
	}{
		{name: "PyTorch 2.11 wheel (cu13)", nccl: ncclWheel, rt: cudartWheel13,
			want: []string{"/site-packages/nvidia/cu13/lib/libcudart.so.13", "/site-packages/nvidia/nccl/lib/libnccl.so.2"}},
		{name: "PyTorch wheel (cu12)", nccl: ncclWheel, rt: cudartWheel12,
			want: []string{"/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12", "/site-packages/nvidia/nccl/lib/libnccl.so.2"}},
		{name: "libtorch zip (hashed runtime)", nccl: ncclLinkedIn, rt: cudartZip,
			want: []string{"/site-packages/torch/lib/libcudart-6d56b25a.so.12"}},
		{name: "CUDA_HOME", nccl: ncclLinkedIn, rt: cudartCUDAHome,
			want: []string{"/cuda-12.1/lib64/libcudart.so.12"}},
		{name: "runtime nowhere", nccl: ncclLinkedIn, rt: cudartMissing,
			err: []string{"libtorch_cuda.so needs libcudart.so.12", "the CUDA runtime", "does not find", "CUDA_HOME", "LD_LIBRARY_PATH"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := systemCUDALibDirs
			systemCUDALibDirs = nil
			t.Cleanup(func() { systemCUDALibDirs = saved })
			torchDir, home := linkableLibtorch(t, tc.nccl, tc.rt)
			t.Setenv("LIBTORCH", torchDir)
			t.Setenv("CUDA_HOME", home)
			t.Setenv("LD_LIBRARY_PATH", "")
			lt, err := Find(false)
			if !wantError(t, err, tc.err) {
				return
			}
			if len(lt.CUDALibs) != len(tc.want) {
				t.Fatalf("links %+v, want %q", lt.CUDALibs, tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasSuffix(lt.CUDALibs[i].Path, w) {
					t.Errorf("links %s, want …%s", lt.CUDALibs[i].Path, w)
				}
				if r := lt.Report(); !strings.Contains(r, "links "+lt.CUDALibs[i].Path) {
					t.Errorf("report %q does not name %s", r, lt.CUDALibs[i].Path)
				}
			}
			_, _, ld := CgoFlags(lt)
			if out, err := linkAndRun(t, ld); err != nil {
				t.Fatalf("link or run with %q: %v\n%s", ld, err, out)
			}
			libs := lt.CUDALibs
			lt.CUDALibs = nil
			_, _, before := CgoFlags(lt)
			lt.CUDALibs = libs
			if out, err := linkAndRun(t, before); err == nil || !strings.Contains(out, "cudaStreamWaitEvent") {
				t.Errorf("the link line without the CUDA runtime (%q) gave %v, %s; want ld to refuse cudaStreamWaitEvent", before, err, out)
			} else if tc.rt != cudartCUDAHome && !strings.Contains(out, "DSO missing from command line") {
				t.Errorf("the link line without the CUDA runtime failed with %s; want ld's \"DSO missing from command line\", as on the H200", out)
			}
		})
	}
}

// A dependency found by the loader is taken as it resolves it; the toolkit folders are searched only for one it
// does not find, $CUDA_HOME's before the system's.
func TestCUDALibDirs(t *testing.T) {
	saved := systemCUDALibDirs
	systemCUDALibDirs = []string{"/usr/local/cuda/lib64"}
	t.Cleanup(func() { systemCUDALibDirs = saved })
	t.Setenv("CUDA_HOME", "/opt/cuda-12.1")
	want := "/opt/cuda-12.1/lib64 /opt/cuda-12.1/lib /usr/local/cuda/lib64"
	if got := strings.Join(cudaLibDirs(), " "); got != want {
		t.Errorf("cudaLibDirs() = %q, want %q", got, want)
	}
	t.Setenv("CUDA_HOME", "")
	if got := strings.Join(cudaLibDirs(), " "); got != "/usr/local/cuda/lib64" {
		t.Errorf("without CUDA_HOME: %q", got)
	}
}

// A failed link or start names the library at fault: ld's missing-DSO error as on the H200, and the loader's
// missing library; other output gives no hint.
func TestLinkHint(t *testing.T) {
	for _, tc := range []struct{ out, want string }{
		{"/usr/bin/ld: x/000025.o: undefined reference to symbol 'cudaStreamWaitEvent@@libcudart.so.13'\n" +
			"/usr/bin/ld: /s/nvidia/cu13/lib/libcudart.so.13: error adding symbols: DSO missing from command line\n",
			"the shim calls cudaStreamWaitEvent of libcudart.so.13"},
		{"/tmp/convrep: error while loading shared libraries: libnvrtc.so.13: cannot open shared object file: No such file or directory\n",
			"the dynamic loader does not find libnvrtc.so.13"},
		{"main.go:3:2: undefined: x\n", ""},
	} {
		got := linkHint([]byte(tc.out))
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("linkHint(%q) = %q, want one holding %q", tc.out, got, tc.want)
		}
	}
}

// Folders the link flags cannot carry are refused by name; others pass.
func TestCheckLinkPath(t *testing.T) {
	for dir, bad := range map[string]bool{"/opt/torch/lib": false, "/opt/a,b/lib": true, "/opt/my torch/lib": true} {
		err := checkLinkPath(dir)
		if (err != nil) != bad || (bad && !strings.Contains(err.Error(), dir)) {
			t.Errorf("checkLinkPath(%q) = %v, want an error: %v", dir, err, bad)
		}
	}
}
