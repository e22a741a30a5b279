package libtorch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// debianImageSources is /etc/apt/sources.list.d/debian.sources of Debian 12's images (the one CI runs on).
const debianImageSources = `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`

const sourcesHeader = "# Written by convrep's set-up (cmd/setup): NVRTC, which compiles convrep's CUDA kernels, is in\n" +
	"# Debian's non-free component. Removing this file disables it again.\n"

// The sources file enables non-free with the image's own mirror, suites and key, for the release's stanzas
// only; an inline key keeps its lines; with no stanza of the release, Debian's mirror and archive key.
func TestNonFreeSources(t *testing.T) {
	for _, tc := range []struct {
		name, debian, release, want string
	}{
		{name: "Debian 12 image", debian: debianImageSources, release: "bookworm", want: sourcesHeader + `
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`},
		{name: "own mirror, inline key, deb-src", release: "bookworm",
			debian: "Types: deb deb-src\nURIs: http://mirror.example/debian\nSuites: bookworm\nComponents: main contrib\n" +
				"Signed-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n abc\n -----END PGP PUBLIC KEY BLOCK-----\n",
			want: sourcesHeader + "\nTypes: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\nComponents: non-free\n" +
				"Signed-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n abc\n -----END PGP PUBLIC KEY BLOCK-----\n"},
		{name: "no debian.sources", release: "bookworm", want: sourcesHeader + `
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`},
		{name: "another release's file", debian: strings.ReplaceAll(debianImageSources, "bookworm", "trixie"), release: "bookworm",
			want: sourcesHeader + "\nTypes: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: non-free\n" +
				"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nonFreeSources(tc.debian, tc.release); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// What the set-up does about NVRTC, from the facts: nothing where one is found or forced, an install (after
// enabling non-free when apt does not offer it) where allowed, else one line saying what to do.
func TestPlanNVRTC(t *testing.T) {
	bookworm := nvrtcFacts{Install: true, CanRoot: true, Codename: "bookworm"}
	with := func(change func(*nvrtcFacts)) nvrtcFacts {
		f := bookworm
		change(&f)
		return f
	}
	for _, tc := range []struct {
		name  string
		facts nvrtcFacts
		want  nvrtcPlan
		note  []string // in the plan's note
	}{
		{name: "CI: missing, non-free off", facts: bookworm, want: nvrtcPlan{Sources: true, Package: "libnvrtc11.2"}},
		{name: "missing, non-free on", facts: with(func(f *nvrtcFacts) { f.Candidate = true }), want: nvrtcPlan{Package: "libnvrtc11.2"}},
		{name: "found by the loader", facts: with(func(f *nvrtcFacts) { f.Found = "/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2" })},
		{name: "wheel's folder", facts: with(func(f *nvrtcFacts) { f.Found = "/site-packages/nvidia/cu13/lib" })},
		{name: "forced", facts: with(func(f *nvrtcFacts) { f.Forced, f.Found = "/opt/libnvrtc.so.12", "/opt/libnvrtc.so.12" })},
		{name: "forced, absent", facts: with(func(f *nvrtcFacts) { f.Forced = "/opt/libnvrtc.so.12" }),
			note: []string{"CONVREP_NVRTC=/opt/libnvrtc.so.12 is not a file"}},
		{name: "--no-install", facts: with(func(f *nvrtcFacts) { f.Install = false }),
			note: []string{"no NVRTC library (libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so.11.2, libnvrtc.so) is found", "install libnvrtc11.2", "CONVREP_NVRTC"}},
		{name: "no root, no sudo", facts: with(func(f *nvrtcFacts) { f.CanRoot = false }),
			note: []string{"cannot install it", "apt-get install libnvrtc11.2", nonFreeSourcesPath}},
		{name: "another system", facts: with(func(f *nvrtcFacts) { f.Codename = "jammy" }),
			note: []string{`no package of it for this system ("jammy")`, "CONVREP_NVRTC"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planNVRTC(tc.facts)
			note := got.Note
			got.Note = ""
			if got != tc.want {
				t.Errorf("plan %+v, want %+v", got, tc.want)
			}
			if (note == "") != (tc.note == nil) {
				t.Errorf("note %q, want one holding %q", note, tc.note)
			}
			for _, w := range tc.note {
				if !strings.Contains(note, w) {
					t.Errorf("note %q lacks %q", note, w)
				}
			}
		})
	}
}

// The loader's NVRTC is found through LD_LIBRARY_PATH, then ld.so.cache's full paths, in internal/gpu/nvrtc's order.
func TestLoaderNVRTC(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"libnvrtc.so.12", "libnvrtc.so.11.2", "other/libnvrtc.so.13"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(dir, "ld.so.cache")
	saved := ldCachePath
	ldCachePath = cache
	t.Cleanup(func() { ldCachePath = saved })
	for _, tc := range []struct {
		name, cache, ldPath, want string
	}{
		{name: "cache", cache: "glibc-ld.so.cache1.1\x00libz.so.1\x00/usr/lib/libz.so.1\x00libnvrtc.so.11.2\x00" + dir + "/libnvrtc.so.11.2\x00x",
			want: dir + "/libnvrtc.so.11.2"},
		{name: "cache, newest first", cache: "\x00" + dir + "/libnvrtc.so.11.2\x00" + dir + "/libnvrtc.so.12\x00", want: dir + "/libnvrtc.so.12"},
		{name: "cache names a removed file", cache: "\x00/gone/libnvrtc.so.12\x00"},
		{name: "LD_LIBRARY_PATH first", cache: "\x00" + dir + "/libnvrtc.so.12\x00", ldPath: "/nowhere:" + dir + "/other",
			want: dir + "/other/libnvrtc.so.13"},
		{name: "none", cache: "\x00/usr/lib/libz.so.1\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(cache, []byte(tc.cache), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv("LD_LIBRARY_PATH", tc.ldPath)
			if got := loaderNVRTC(); got != tc.want {
				t.Errorf("loaderNVRTC() = %q, want %q", got, tc.want)
			}
		})
	}
}

// The folder of a CUDA libtorch's NVRTC goes on convrep's RUNPATH, so that a program linked with the set-up's
// flags dlopens NVRTC by soname with no LD_LIBRARY_PATH, in each layout that carries one; without it the
// dlopen fails.
func TestNVRTCOnRunPath(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rt     cudartLayout
		dir    func(site, cudaHome string) string
		soname string
		extra  bool // the folder is one the CUDA runtime's flags do not carry already
	}{
		{name: "PyTorch 2.11 wheel (cu13)", rt: cudartWheel13, soname: "libnvrtc.so.13",
			dir: func(site, _ string) string { return filepath.Join(site, "nvidia", "cu13", "lib") }},
		{name: "PyTorch wheel (cu12)", rt: cudartWheel12, soname: "libnvrtc.so.12", extra: true,
			dir: func(site, _ string) string { return filepath.Join(site, "nvidia", "cuda_nvrtc", "lib") }},
		{name: "CUDA_HOME", rt: cudartCUDAHome, soname: "libnvrtc.so.12",
			dir: func(_, home string) string { return filepath.Join(home, "lib64") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := systemCUDALibDirs
			systemCUDALibDirs = nil
			t.Cleanup(func() { systemCUDALibDirs = saved })
			torchDir, home := linkableLibtorch(t, ncclLinkedIn, tc.rt)
			dir := tc.dir(filepath.Dir(torchDir), home)
			buildShared(t, filepath.Join(dir, tc.soname), "int nvrtcVersion(int *major, int *minor) { *major = 13; *minor = 0; return 0; }\n", "-Wl,-soname,"+tc.soname)
			t.Setenv("LIBTORCH", torchDir)
			t.Setenv("CUDA_HOME", home)
			t.Setenv("LD_LIBRARY_PATH", "")
			lt, err := Find(false)
			if err != nil {
				t.Fatal(err)
			}
			if lt.NVRTCDir != dir {
				t.Fatalf("NVRTCDir = %q, want %q", lt.NVRTCDir, dir)
			}
			if r := lt.Report(); !strings.Contains(r, "NVRTC from "+dir) {
				t.Errorf("report %q does not name NVRTC's folder", r)
			}
			if got := nvrtcRpath(lt) != ""; got != tc.extra {
				t.Errorf("nvrtcRpath = %q: want an -rpath of its own: %v", nvrtcRpath(lt), tc.extra)
			}
			_, _, ld := CgoFlags(lt)
			if strings.Contains(ld, tc.soname) {
				t.Errorf("the flags %q link NVRTC; it is dlopened, only its folder belongs on the run path", ld)
			}
			if out, err := dlopenNVRTC(t, ld, tc.soname); err != nil || strings.TrimSpace(out) != "13.0" {
				t.Fatalf("dlopen %s from a program linked with %q: %v\n%s", tc.soname, ld, err, out)
			}
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "internal", "gpu", "nvrtc"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := WriteNVRTCFlags(root, lt); err != nil {
				t.Fatal(err)
			}
			flags, err := os.ReadFile(filepath.Join(root, nvrtcFlags))
			if want := "// #cgo LDFLAGS: -Wl,-rpath," + dir + "\nimport \"C\"\n"; err != nil || !strings.Contains(string(flags), want) {
				t.Errorf("%s holds %q (%v), want %q", nvrtcFlags, flags, err, want)
			}
			lt.NVRTCDir = ""
			if err := WriteNVRTCFlags(root, lt); err != nil || exists(filepath.Join(root, nvrtcFlags)) {
				t.Errorf("with no NVRTC folder %s is still there (%v)", nvrtcFlags, err)
			}
			_, _, without := CgoFlags(lt)
			if tc.extra {
				if out, err := dlopenNVRTC(t, without, tc.soname); err == nil {
					t.Errorf("without NVRTC's folder (%q) the dlopen still worked: %s", without, out)
				}
			}
		})
	}
}

// dlopenNVRTC links a program with ldflags that dlopens soname, as internal/gpu/nvrtc does, and prints the version
// it reports; it runs with no LD_LIBRARY_PATH.
func dlopenNVRTC(t *testing.T, ldflags, soname string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.c")
	body := `#include <dlfcn.h>
#include <stdio.h>
int cudaStreamWaitEvent(void *, void *, unsigned);
int main(void) {
	void *h = dlopen("` + soname + `", RTLD_NOW);
	if (h == NULL) {
		printf("%s\n", dlerror());
		return 1;
	}
	int (*version)(int *, int *) = (int (*)(int *, int *))dlsym(h, "nvrtcVersion");
	int major, minor;
	version(&major, &minor);
	printf("%d.%d\n", major, minor);
	return cudaStreamWaitEvent(0, 0, 0);
}
`
	if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "prog")
	if out, err := exec.Command("gcc", append(append([]string{"-o", prog, src}, strings.Fields(ldflags)...), "-ldl")...).CombinedOutput(); err != nil {
		return string(out), err
	}
	run := exec.Command(prog)
	run.Env = append(os.Environ(), "LD_LIBRARY_PATH=")
	out, err := run.CombinedOutput()
	return string(out), err
}
