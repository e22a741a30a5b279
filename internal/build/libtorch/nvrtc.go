package libtorch

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// NVRTC compiles convrep's CUDA kernels at run time (internal/gpu/nvrtc), and its tests compile every kernel on
// any machine, GPU or not; so the set-up makes sure a libnvrtc loads. On a GPU host it comes with PyTorch's
// wheel or the CUDA toolkit (nvrtcDir, cudalibs.go); elsewhere the set-up installs Debian's, which lies in
// the non-free component that Debian's images do not enable: it then enables non-free in a sources file of
// its own, leaving the system's files as they were.

// nvrtcPackages are Debian's NVRTC packages by release (CUDA 11.8's NVRTC, soname libnvrtc.so.11.2, in
// bookworm), each in the release's non-free component.
var nvrtcPackages = map[string]string{"bookworm": "libnvrtc11.2"}

// The apt sources file the set-up writes, the one of Debian's images whose mirrors and key it repeats, and
// where the facts about this machine are read (variables for the tests).
var (
	nonFreeSourcesPath = "/etc/apt/sources.list.d/convrep-non-free.sources"
	debianSourcesPath  = "/etc/apt/sources.list.d/debian.sources"
	ldCachePath        = "/etc/ld.so.cache"
	osReleasePath      = "/etc/os-release"
)

// nvrtcFacts are what planNVRTC decides from.
type nvrtcFacts struct {
	Forced    string // $CONVREP_NVRTC
	Found     string // where an NVRTC is found: the forced file, the wheel's or toolkit's folder, the loader's cache; "" for nowhere
	Install   bool   // apt-get may run (no --no-install, no offline bundle)
	CanRoot   bool   // this process is root, or sudo is on the PATH (as aptInstall decides)
	Codename  string // the Debian release, from /etc/os-release
	Candidate bool   // apt already offers the package: non-free is enabled
}

// nvrtcPlan is what the set-up does about NVRTC: nothing, one line printed (Note), or an install of Package,
// first enabling non-free (Sources) when apt does not offer it.
type nvrtcPlan struct {
	Note    string
	Sources bool
	Package string
}

// planNVRTC decides, from the facts alone, what the set-up does about NVRTC. A missing NVRTC that cannot be
// installed here is a note, not a failure: the set-up serves CPU builds too, and internal/gpu/nvrtc's tests then
// fail with what to do.
func planNVRTC(f nvrtcFacts) nvrtcPlan {
	missing := "no NVRTC library (" + strings.Join(nvrtcSonames, ", ") + ") is found, so convrep cannot compile its CUDA kernels and internal/gpu/nvrtc's tests fail"
	if f.Forced != "" {
		if f.Found == "" {
			return nvrtcPlan{Note: fmt.Sprintf("CONVREP_NVRTC=%s is not a file: internal/gpu/nvrtc loads no other NVRTC while it is set", f.Forced)}
		}
		return nvrtcPlan{}
	}
	if f.Found != "" {
		return nvrtcPlan{}
	}
	pkg := nvrtcPackages[f.Codename]
	switch {
	case pkg == "":
		return nvrtcPlan{Note: fmt.Sprintf("%s; the set-up knows no package of it for this system (%q): install CUDA's NVRTC, or set CONVREP_NVRTC to a libnvrtc.so", missing, f.Codename)}
	case !f.Install:
		return nvrtcPlan{Note: fmt.Sprintf("%s; not installing it here: install %s from Debian's non-free component, or set CONVREP_NVRTC to a libnvrtc.so", missing, pkg)}
	case !f.CanRoot:
		return nvrtcPlan{Note: fmt.Sprintf("%s; this user cannot install it: as root, enable Debian's non-free component (as in %s) and run `apt-get install %s`", missing, nonFreeSourcesPath, pkg)}
	}
	return nvrtcPlan{Sources: !f.Candidate, Package: pkg}
}

// EnsureNVRTC carries out planNVRTC on this machine.
func EnsureNVRTC(lt *Libtorch, install bool) error {
	f := nvrtcFacts{Forced: os.Getenv("CONVREP_NVRTC"), Install: install, Codename: osCodename()}
	switch {
	case f.Forced != "":
		if st, err := os.Stat(f.Forced); err == nil && !st.IsDir() {
			f.Found = f.Forced
		}
	case lt.NVRTCDir != "":
		f.Found = lt.NVRTCDir
	default:
		f.Found = loaderNVRTC()
	}
	_, sudoErr := exec.LookPath("sudo")
	f.CanRoot = os.Geteuid() == 0 || sudoErr == nil
	pkg := nvrtcPackages[f.Codename]
	if f.Found == "" && pkg != "" && f.Install && f.CanRoot {
		f.Candidate = aptCandidate(pkg)
	}
	p := planNVRTC(f)
	if p.Note != "" {
		fmt.Println("setup:", p.Note)
	}
	if p.Package == "" {
		return nil
	}
	if p.Sources {
		debian, err := os.ReadFile(debianSourcesPath)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		fmt.Printf("setup: NVRTC (%s) is in Debian's non-free component, which no apt source enables: enabling it in %s\n", pkg, nonFreeSourcesPath)
		if err := writeAsRoot(nonFreeSourcesPath, nonFreeSources(string(debian), f.Codename)); err != nil {
			return fmt.Errorf("enable Debian's non-free component for %s: %w", pkg, err)
		}
		if err := asRoot("apt-get", "update", "-q"); err != nil {
			return err
		}
	}
	fmt.Printf("setup: installing %s (NVRTC, which compiles convrep's CUDA kernels) with apt-get\n", pkg)
	if err := asRoot("apt-get", "install", "-y", "-q", "--no-install-recommends", pkg); err != nil {
		return err
	}
	if loaderNVRTC() == "" {
		return fmt.Errorf("apt-get installed %s, but the dynamic loader finds none of %s", pkg, strings.Join(nvrtcSonames, ", "))
	}
	return nil
}

// nonFreeSources is the deb822 sources file enabling the non-free component of release: one stanza for each
// stanza of debian (the image's debian.sources) that names the release among its suites, with its mirrors,
// suites and key; Debian's own mirror and archive key when none does.
func nonFreeSources(debian, release string) string {
	var out strings.Builder
	out.WriteString("# Written by convrep's set-up (cmd/setup): NVRTC, which compiles convrep's CUDA kernels, is in\n" +
		"# Debian's non-free component. Removing this file disables it again.\n")
	n := 0
	for _, stanza := range deb822Stanzas(debian) {
		if !slices.Contains(strings.Fields(stanza.value("Suites")), release) || !slices.Contains(strings.Fields(stanza.value("Types")), "deb") {
			continue
		}
		out.WriteString("\nTypes: deb\n")
		for _, key := range []string{"URIs", "Suites"} {
			out.WriteString(stanza.field(key))
		}
		out.WriteString("Components: non-free\n")
		out.WriteString(stanza.field("Signed-By"))
		n++
	}
	if n == 0 {
		fmt.Fprintf(&out, "\nTypes: deb\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: non-free\n"+
			"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n", release, release)
	}
	return out.String()
}

// deb822Stanza is one paragraph of a deb822 file: its fields by name, each with its lines as written (a
// multi-line value such as an inline Signed-By key keeps its continuation lines).
type deb822Stanza map[string][]string

// deb822Stanzas splits a deb822 file into its paragraphs; comment lines are dropped.
func deb822Stanzas(text string) []deb822Stanza {
	var stanzas []deb822Stanza
	var cur deb822Stanza
	var last string
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			cur, last = nil, ""
		case strings.HasPrefix(line, "#"):
		case line[0] == ' ' || line[0] == '\t':
			if cur != nil && last != "" {
				cur[last] = append(cur[last], line)
			}
		default:
			key, _, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			if cur == nil {
				cur = deb822Stanza{}
				stanzas = append(stanzas, cur)
			}
			last = strings.TrimSpace(key)
			cur[last] = []string{line}
		}
	}
	return stanzas
}

// value is a one-line field's value, "" when absent.
func (s deb822Stanza) value(key string) string {
	if l := s[key]; len(l) > 0 {
		_, v, _ := strings.Cut(l[0], ":")
		return strings.TrimSpace(v)
	}
	return ""
}

// field is a field's lines as written, each ended by a newline; "" when absent.
func (s deb822Stanza) field(key string) string {
	if len(s[key]) == 0 {
		return ""
	}
	return strings.Join(s[key], "\n") + "\n"
}

// loaderNVRTC is the path of an NVRTC the dynamic loader finds by soname, through LD_LIBRARY_PATH or its cache
// (ld.so.cache, which holds each library's full path); "" when it finds none.
func loaderNVRTC() string {
	for _, d := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		for _, name := range nvrtcSonames {
			if p := filepath.Join(d, name); d != "" && exists(p) {
				return p
			}
		}
	}
	cache, err := os.ReadFile(ldCachePath)
	if err != nil {
		return ""
	}
	for _, name := range nvrtcSonames {
		i := bytes.Index(cache, []byte("/"+name+"\x00"))
		if i < 0 {
			continue
		}
		start := bytes.LastIndexByte(cache[:i], 0) + 1
		if p := string(cache[start : i+1+len(name)]); exists(p) {
			return p
		}
	}
	return ""
}

// osCodename is VERSION_CODENAME of /etc/os-release (bookworm), "" when it names none.
func osCodename() string {
	b, err := os.ReadFile(osReleasePath)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VERSION_CODENAME="); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}

// aptCandidate reports whether apt offers pkg for installing (`apt-cache policy` names a candidate).
func aptCandidate(pkg string) bool {
	out, err := exec.Command("apt-cache", "policy", pkg).Output()
	return err == nil && bytes.Contains(out, []byte("Candidate:")) && !bytes.Contains(out, []byte("Candidate: (none)"))
}

// asRoot runs a command as root: directly when this process is, else through sudo.
func asRoot(name string, args ...string) error {
	argv := append([]string{name}, args...)
	if os.Geteuid() != 0 {
		argv = append([]string{"sudo"}, argv...)
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return nil
}

// writeAsRoot writes a root-owned configuration file: atomically when this process is root, else through
// `sudo install` from a temporary file.
func writeAsRoot(path, content string) error {
	if os.Geteuid() == 0 {
		// A temporary file beside it, then renamed over it (the set-up builds before vendor/ exists, so it uses
		// the standard library alone, not internal/atomicfile, whose folder half needs x/sys).
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	}
	tmp, err := os.CreateTemp("", "convrep-sources-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return asRoot("install", "-m", "0644", tmp.Name(), path)
}

// nvrtcFlags carries the RUNPATH to a CUDA libtorch's NVRTC into internal/gpu/nvrtc itself, for its own binaries
// (its tests), which do not link the shim whose flags give convrep that RUNPATH. Written by the set-up, ignored
// by git; absent where the loader's own search finds NVRTC.
const nvrtcFlags = "internal/gpu/nvrtc/cgo_flags.go"

// WriteNVRTCFlags writes nvrtcFlags for lt.NVRTCDir, or removes it when there is none.
func WriteNVRTCFlags(root string, lt *Libtorch) error {
	path := filepath.Join(root, nvrtcFlags)
	if lt.NVRTCDir == "" {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	src := "// Code written by convrep's cmd/setup for libtorch " + lt.Version + ". DO NOT EDIT.\n\npackage nvrtc\n\n" +
		"// #cgo LDFLAGS: -Wl,-rpath," + lt.NVRTCDir + "\nimport \"C\"\n"
	return os.WriteFile(path, []byte(src), 0o644)
}
