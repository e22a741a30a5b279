package libtorch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noSystemHeaders keeps this machine's own /usr/include and /usr/local/cuda/include out of a test's search.
func noSystemHeaders(t *testing.T) {
	t.Helper()
	saved := systemIncludeDirs
	systemIncludeDirs = nil
	t.Cleanup(func() { systemIncludeDirs = saved })
	t.Setenv("CUDA_HOME", "")
	t.Setenv("CGO_CPPFLAGS", "")
}

// headersIn makes a folder with an include/ holding the named headers and returns the folder: empty ones, but
// nccl.h states NCCL 2.18.1, the release standInLibtorchCUDA's library reports by default.
func headersIn(t *testing.T, names ...string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "include"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		var body []byte
		if n == "nccl.h" {
			body = []byte(ncclHeader(ncclVersion{2, 18, 1}))
		}
		if err := os.WriteFile(filepath.Join(home, "include", n), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// A CUDA build compiles NCCL in only where nccl.h and cuda_runtime_api.h are found, in libtorch's include
// folder, $CUDA_HOME/include, $CGO_CPPFLAGS's -I folders or the system's; each found folder is passed with -I
// (libtorch's own and /usr/include aside); a missing header stops the set-up, naming it and what to set.
func TestNCCLHeaderDiscovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		libtorch []string // headers in libtorch's include/
		home     []string // headers in $CUDA_HOME/include
		cpp      []string // headers in a folder named by CGO_CPPFLAGS
		cppForm  string   // how CGO_CPPFLAGS names it: "-I%s" or "-I %s"
		system   []string // headers in a stand-in for /usr/local/cuda/include
		want     []string // what the defines must hold ({home}, {cpp}, {system}, {lt} stand for the folders)
		wantNot  []string
		err      []string
	}{
		{name: "both in CUDA_HOME", home: []string{"cuda_runtime_api.h", "nccl.h"},
			want: []string{"-DCONVREP_NCCL", "-I{home}/include", "-DCONVREP_NCCL_LIB_VERSION_CODE=21801"}, wantNot: []string{"-I{lt}"}},
		{name: "CUDA in CUDA_HOME, NCCL in CGO_CPPFLAGS", home: []string{"cuda_runtime_api.h"}, cpp: []string{"nccl.h"}, cppForm: "-O2 -I%s",
			want: []string{"-DCONVREP_NCCL", "-I{home}/include", "-I{cpp}"}},
		{name: "CGO_CPPFLAGS with a space after -I", cpp: []string{"cuda_runtime_api.h", "nccl.h"}, cppForm: "-I %s",
			want: []string{"-DCONVREP_NCCL", "-I{cpp}"}},
		{name: "both in the system's CUDA folder", system: []string{"cuda_runtime_api.h", "nccl.h"},
			want: []string{"-DCONVREP_NCCL", "-I{system}"}},
		{name: "NCCL in libtorch's include", libtorch: []string{"nccl.h"}, home: []string{"cuda_runtime_api.h"},
			want: []string{"-DCONVREP_NCCL", "-I{home}/include"}, wantNot: []string{"-I{lt}"}},
		{name: "no nccl.h", home: []string{"cuda_runtime_api.h"},
			err: []string{"nccl.h is in none of", "{home}/include", "libnccl-dev", "CGO_CPPFLAGS"}},
		{name: "no cuda_runtime_api.h", home: []string{"nccl.h"},
			err: []string{"cuda_runtime_api.h is in none of", "CUDA_HOME", "CGO_CPPFLAGS"}},
		{name: "neither", err: []string{"cuda_runtime_api.h is in none of"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noSystemHeaders(t)
			lt := &Libtorch{Include: filepath.Join(headersIn(t, tc.libtorch...), "include"), Lib: standInLibtorchCUDA(t, t.TempDir(), ncclLinkedIn, ncclVersion{2, 18, 1}), CUDA: true}
			home := headersIn(t, tc.home...)
			t.Setenv("CUDA_HOME", home)
			cpp := filepath.Join(headersIn(t, tc.cpp...), "include")
			if tc.cppForm != "" {
				t.Setenv("CGO_CPPFLAGS", strings.ReplaceAll(tc.cppForm, "%s", cpp))
			}
			system := filepath.Join(headersIn(t, tc.system...), "include")
			systemIncludeDirs = []string{system}
			named := strings.NewReplacer("{home}", home, "{cpp}", cpp, "{system}", system, "{lt}", lt.Include)
			got, err := distDefines(lt)
			if tc.err != nil {
				if err == nil {
					t.Fatalf("defines %q, want an error", got)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), named.Replace(w)) {
						t.Errorf("error %q lacks %q", err, named.Replace(w))
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got+" ", named.Replace(w)+" ") {
					t.Errorf("defines %q lack %q", got, named.Replace(w))
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got+" ", named.Replace(w)+" ") {
					t.Errorf("defines %q hold %q", got, named.Replace(w))
				}
			}
		})
	}
}

// A CPU build looks for no CUDA header and compiles no NCCL, whatever the environment says.
func TestCPUBuildNeedsNoCUDAHeaders(t *testing.T) {
	noSystemHeaders(t)
	got, err := distDefines(&Libtorch{Include: t.TempDir(), CUDA: false})
	if err != nil || strings.Contains(got, "NCCL") || strings.Contains(got, "-I") {
		t.Fatalf("CPU build: %q, %v", got, err)
	}
}

// The search order is libtorch's include, CUDA_HOME's, CGO_CPPFLAGS's -I folders, then the system's, each once.
func TestIncludeDirsOrder(t *testing.T) {
	noSystemHeaders(t)
	systemIncludeDirs = []string{"/usr/local/cuda/include", "/usr/include"}
	t.Setenv("CUDA_HOME", "/opt/cuda")
	t.Setenv("CGO_CPPFLAGS", "-DX -I/opt/nccl/include -I /usr/local/cuda/include/ -isystem /ignored")
	got := strings.Join(includeDirs(&Libtorch{Include: "/opt/libtorch/include"}), " ")
	want := "/opt/libtorch/include /opt/cuda/include /opt/nccl/include /usr/local/cuda/include /usr/include"
	if got != want {
		t.Fatalf("search order %s, want %s", got, want)
	}
}
