// Package offline is the offline bundle: what a host with no network needs beside a clone of convrep to build it
// (Write, bundle.go), and the set-up's use of it there (Open, offline.go). It imports the standard library and
// internal/build/gotchpatch only: the set-up (cmd/setup) builds it before vendor/ exists.
package offline

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"convrep/internal/build/gotchpatch"
)

// The offline bundle: what a host with no network needs beside a clone of convrep to build it. Made by
// `go run ./cmd/setup bundle --to DIR` where the module proxy is reachable, used by `CONVREP_OFFLINE=DIR make
// setup` (offline.go). Its files:
const (
	VendorFile     = "vendor.tar.gz"            // `go mod vendor` of this module, without gotch (the set-up's patched copy takes its place)
	GotchFile      = "gotch.tar.gz"             // gotch's module source without its examples and generator
	GoFile         = "go.tar.xz"                // optional: this Go toolchain, without its own sources' tests and commands
	bundleManifest = "bundle.json"              // what is in the bundle, for the set-up's checks
	vendorGotch    = "github.com/sugarme/gotch" // its folder under vendor/
)

// manifest describes a bundle.
type manifest struct {
	Module       string    `json:"module"` // convrep's go.mod, which the vendored modules were made for
	GoVersion    string    `json:"go_version"`
	GotchVersion string    `json:"gotch_version"`
	Toolchain    bool      `json:"toolchain"`
	Made         time.Time `json:"made"`
}

// Write writes the bundle of the module in root into dir.
func Write(root, dir string, withGo bool) error {
	start := time.Now()
	if _, err := os.Stat(filepath.Join(root, gotchpatch.Dir)); err != nil {
		return fmt.Errorf("%s is missing: run `make setup` first (go mod vendor follows go.mod's replace directive to it)", gotchpatch.Dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "convrep-bundle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	vendor := filepath.Join(tmp, "vendor")
	cmd := exec.Command("go", "mod", "vendor", "-o", vendor)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod vendor: %v\n%s", err, out)
	}
	// The vendored gotch is this machine's patched copy; the host makes its own from gotch's source.
	if err := os.RemoveAll(filepath.Join(vendor, vendorGotch)); err != nil {
		return err
	}
	if err := writeTarGz(filepath.Join(dir, VendorFile), vendor, "vendor", nil); err != nil {
		return err
	}
	src, err := gotchpatch.Source(root)
	if err != nil {
		return err
	}
	skipGotch := func(rel string, d fs.DirEntry) bool {
		return d.IsDir() && (rel == "example" || rel == "gen")
	}
	if err := writeTarGz(filepath.Join(dir, GotchFile), src, "gotch", skipGotch); err != nil {
		return err
	}
	m := manifest{Module: goModText(root), GoVersion: runtime.Version(), GotchVersion: gotchpatch.Version, Toolchain: withGo, Made: time.Now().UTC()}
	if withGo {
		if err := writeToolchain(filepath.Join(dir, GoFile)); err != nil {
			return err
		}
	} else if err := os.Remove(filepath.Join(dir, GoFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, bundleManifest), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var total int64
	for _, f := range []string{VendorFile, GotchFile, GoFile, bundleManifest} {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
			fmt.Printf("setup: bundle %s/%s %.1f MB\n", dir, f, float64(st.Size())/1e6)
			total += st.Size()
		}
	}
	fmt.Printf("setup: bundle of %.1f MB written in %s; on the offline host: CONVREP_OFFLINE=%s make setup\n",
		float64(total)/1e6, time.Since(start).Round(time.Second), dir)
	return nil
}

// goModText is the module's go.mod, which a bundle's vendor/modules.txt must agree with.
func goModText(root string) string {
	b, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	return string(b)
}

// writeTarGz archives the tree at src under the name prefix, written atomically; skip leaves out a
// folder or file by its path relative to src.
func writeTarGz(path, src, prefix string, skip func(rel string, d fs.DirEntry) bool) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err := writeTar(zw, src, prefix, skip); err != nil {
		f.Close()
		return fmt.Errorf("archive %s: %w", src, err)
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeTar writes the regular files, folders and symbolic links under src as a tar stream.
func writeTar(w io.Writer, src, prefix string, skip func(rel string, d fs.DirEntry) bool) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if rel != "." && skip != nil && skip(filepath.ToSlash(rel), d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(filepath.Join(prefix, rel))
		if d.IsDir() {
			hdr.Name += "/"
		}
		hdr.Mode = int64(info.Mode().Perm() | 0o200) // the module cache's files are read-only
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// writeToolchain packs this Go toolchain (GOROOT) as go/..., compressed with xz: about 26 MB where gzip gives
// 42. Left out: what building and testing a module never reads (the toolchain's own commands' sources, its
// tests and test data, documentation, gofmt and two tools go build does not run).
func writeToolchain(path string) error {
	xz, err := exec.LookPath("xz")
	if err != nil {
		return fmt.Errorf("--go compresses the toolchain with xz, which is not installed (Debian: xz-utils)")
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("--go: go env GOROOT: %w", err)
	}
	goroot := strings.TrimSpace(string(out))
	skip := func(rel string, d fs.DirEntry) bool {
		switch {
		case rel == "src/cmd" || rel == "test" || rel == "api" || rel == "doc" || rel == "misc" || rel == "lib/wasm" || rel == "pkg/obj":
			return true
		case rel == "bin/gofmt" || strings.HasSuffix(rel, "/fix") && strings.HasPrefix(rel, "pkg/tool/") || strings.HasSuffix(rel, "/preprofile") && strings.HasPrefix(rel, "pkg/tool/"):
			return true
		case d.IsDir() && d.Name() == "testdata":
			return true
		case !d.IsDir() && strings.HasSuffix(d.Name(), "_test.go"):
			return true
		}
		return false
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	cmd := exec.Command(xz, "-T0", "-6", "-c")
	cmd.Stdout = f
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	werr := writeTar(in, goroot, "go", skip)
	in.Close()
	if err := cmd.Wait(); err != nil || werr != nil {
		f.Close()
		return fmt.Errorf("pack the Go toolchain %s: tar %v, xz %v", goroot, werr, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
