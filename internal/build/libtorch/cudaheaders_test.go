package libtorch

import (
	"path/filepath"
	"strings"
	"testing"
)

// The set-up fetches the headers only on a CPU libtorch that lacks them, where it may download and has the
// tools; every other case is silent or one line naming the test that will fail, never a failed set-up.
func TestPlanCUDAHeaders(t *testing.T) {
	for _, tc := range []struct {
		name      string
		f         cudaHeaderFacts
		fetch     bool
		noteHas   string // "" for no note
		noteLacks string
	}{
		{name: "CPU libtorch, nothing yet", f: cudaHeaderFacts{Install: true}, fetch: true},
		{name: "already fetched", f: cudaHeaderFacts{Install: true, Have: true}},
		{name: "CUDA libtorch compiles the real thing", f: cudaHeaderFacts{CUDA: true, Install: true}},
		{name: "CUDA libtorch offline", f: cudaHeaderFacts{CUDA: true}},
		{name: "folder of one's own", f: cudaHeaderFacts{Forced: "/opt/h", Have: true, Install: true}},
		{name: "folder of one's own, empty", f: cudaHeaderFacts{Forced: "/opt/h", Install: true}, noteHas: "CONVREP_CUDA_HEADERS=/opt/h holds no ATen/cuda/CUDAContext.h"},
		{name: "offline", f: cudaHeaderFacts{}, noteHas: "offline or --no-install", noteLacks: "no apt-get"},
		{name: "no cache folder", f: cudaHeaderFacts{Install: true, NoPlace: "no cache folder for the CUDA libtorch headers: $HOME is not defined"}, noteHas: "$HOME is not defined"},
		{name: "no cache folder, CUDA libtorch", f: cudaHeaderFacts{CUDA: true, NoPlace: "no cache folder"}},
		{name: "no apt", f: cudaHeaderFacts{Install: true, Tools: "apt-get, dpkg-deb"}, noteHas: "no apt-get, dpkg-deb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fetch, note := planCUDAHeaders(tc.f)
			if fetch != tc.fetch {
				t.Errorf("fetch = %v, want %v", fetch, tc.fetch)
			}
			if (note == "") != (tc.noteHas == "") || !strings.Contains(note, tc.noteHas) {
				t.Errorf("note = %q, want one with %q", note, tc.noteHas)
			}
			if tc.noteHas != "" && !strings.Contains(note, "TestCUDAShimCompilesOnLibtorch2") {
				t.Errorf("note %q does not name the test that fails", note)
			}
			if tc.noteLacks != "" && strings.Contains(note, tc.noteLacks) {
				t.Errorf("note %q says %q", note, tc.noteLacks)
			}
		})
	}
}

// CUDAHeaders finds the folder CONVREP_CUDA_HEADERS names, or the set-up's once its stamp is written, and reads
// the NCCL release from its nccl.h; otherwise it says what to run.
func TestCUDAHeaders(t *testing.T) {
	layout := func(t *testing.T, dir string, stamp bool) {
		t.Helper()
		files := map[string]string{cudaHeaderMarker: "// stand-in\n", "nccl.h": ncclHeader(ncclVersion{2, 22, 3})}
		if stamp {
			files[cudaHeaderStamp] = "libtorch-cuda-dev 2.6.0+dfsg-7+b1\n"
		}
		writeFiles(t, dir, files)
	}
	t.Run("CONVREP_CUDA_HEADERS", func(t *testing.T) {
		dir := t.TempDir()
		layout(t, dir, false)
		t.Setenv("CONVREP_CUDA_HEADERS", dir)
		got, code, err := CUDAHeaders()
		if err != nil || got != dir || code != 22203 {
			t.Errorf("CUDAHeaders() = %q, %d, %v; want %q, 22203", got, code, err, dir)
		}
	})
	t.Run("CONVREP_CUDA_HEADERS without libtorch", func(t *testing.T) {
		t.Setenv("CONVREP_CUDA_HEADERS", t.TempDir())
		if _, _, err := CUDAHeaders(); err == nil || !strings.Contains(err.Error(), "no ATen/cuda/CUDAContext.h") {
			t.Errorf("err = %v, want one saying there is no ATen/cuda/CUDAContext.h", err)
		}
	})
	t.Run("the set-up's folder", func(t *testing.T) {
		cache := t.TempDir()
		t.Setenv("XDG_CACHE_HOME", cache)
		t.Setenv("CONVREP_CUDA_HEADERS", "")
		dir := filepath.Join(cache, "convrep", "cuda-headers-"+cudaHeaderSuite)
		layout(t, dir, false) // unpacked but unfinished: no stamp
		if _, _, err := CUDAHeaders(); err == nil || !strings.Contains(err.Error(), "run make setup") {
			t.Errorf("without the stamp: err = %v, want one saying to run make setup", err)
		}
		layout(t, dir, true)
		got, code, err := CUDAHeaders()
		if err != nil || got != dir || code != 22203 {
			t.Errorf("CUDAHeaders() = %q, %d, %v; want %q, 22203", got, code, err, dir)
		}
	})
}

// The sources file names the release and the components that hold the packages, signed by Debian's key.
func TestCUDAHeaderSources(t *testing.T) {
	s := cudaHeaderSources()
	for _, want := range []string{"Suites: trixie\n", "Components: main contrib non-free\n", "Signed-By: " + debianKeyring + "\n", "Types: deb\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("sources file lacks %q:\n%s", want, s)
		}
	}
}
