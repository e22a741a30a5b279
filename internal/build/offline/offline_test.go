package offline

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"convrep/internal/build/gotchpatch"
)

// TestOfflineSetup builds convrep as a host with no network does: a bundle written by `setup bundle` from this
// checkout, a copy of the checkout's files, then `CONVREP_OFFLINE=bundle make setup` and a plain
// `go build ./cmd/...` there with the module proxy off and an empty module cache, against this machine's
// libtorch. Any module the build wanted from the network would fail it.
func TestOfflineSetup(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, gotchpatch.Dir)); err != nil {
		t.Fatalf("%s is missing: make test runs the set-up first", gotchpatch.Dir)
	}
	bundle := t.TempDir()
	if err := Write(root, bundle, false); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "convrep")
	copyCheckout(t, root, clone)

	env := append(os.Environ(), "CONVREP_OFFLINE="+bundle, "GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local",
		"GOMODCACHE="+t.TempDir(), "GONOSUMDB=", "GOPRIVATE=")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = clone, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("make", "setup")
	for _, w := range []string{"offline bundle " + bundle, "C++ standard c++17", "setup: done"} {
		if !strings.Contains(out, w) {
			t.Errorf("make setup printed no %q:\n%s", w, out)
		}
	}
	if link, err := os.Readlink(filepath.Join(clone, "vendor", vendorGotch)); err != nil || link != "../../../third_party/gotch" {
		t.Errorf("vendor/%s: link %q, %v; want ../../../third_party/gotch", vendorGotch, link, err)
	}
	run("go", "build", "-o", t.TempDir()+"/", "./cmd/...")
	if again := run("make", "setup"); !strings.Contains(again, "up to date") {
		t.Errorf("a second make setup did not find the copy up to date:\n%s", again)
	}
}

// copyCheckout copies the files git knows of (tracked, and untracked but not ignored) into dst.
func copyCheckout(t *testing.T, root, dst string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, rel)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, or a link
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, rel), b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// A bundle made for another go.mod or another gotch is refused, naming the bundle and what to do.
func TestOpenOfflineRefusesAnotherCheckout(t *testing.T) {
	root := t.TempDir()
	mod := "module convrep\n\ngo 1.26.8\n"
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    manifest
		err  string
	}{
		{"ok", manifest{Module: mod, GotchVersion: gotchpatch.Version}, ""},
		{"another go.mod", manifest{Module: mod + "require x v1\n", GotchVersion: gotchpatch.Version}, "made for another go.mod"},
		{"another gotch", manifest{Module: mod, GotchVersion: "v0.8.0"}, "holds gotch v0.8.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b, _ := json.Marshal(tc.m)
			if err := os.WriteFile(filepath.Join(dir, bundleManifest), b, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv(Env, dir)
			o, err := Open(root)
			if tc.err == "" {
				if err != nil || o == nil {
					t.Fatalf("%v, %v", o, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("err = %v, want one naming %s and %q", err, dir, tc.err)
			}
		})
	}
	t.Setenv(Env, t.TempDir())
	if _, err := Open(root); err == nil || !strings.Contains(err.Error(), "not a bundle") {
		t.Fatalf("a folder without %s: %v", bundleManifest, err)
	}
}

// untarGz writes only inside its folder: names and links that climb out are refused; a round trip through
// writeTarGz keeps files, modes and links.
func TestUntarGz(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a/b/run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b/run.sh", filepath.Join(src, "a/link")); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "x.tar.gz")
	if err := writeTarGz(archive, src, "top", nil); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := untarGz(archive, dst); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dst, "top/a/b/run.sh")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("run.sh: %v, %v", st, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "top/a/link")); err != nil || l != "b/run.sh" {
		t.Errorf("link: %q, %v", l, err)
	}

	for _, tc := range []struct {
		name string
		hdr  tar.Header
	}{
		{"climbing name", tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644}},
		{"absolute name", tar.Header{Name: "/etc/evil", Typeflag: tar.TypeReg, Mode: 0o644}},
		{"climbing link", tar.Header{Name: "a/l", Linkname: "../../x", Typeflag: tar.TypeSymlink}},
		{"absolute link", tar.Header{Name: "a/l", Linkname: "/etc", Typeflag: tar.TypeSymlink}},
		{"device", tar.Header{Name: "dev", Typeflag: tar.TypeChar}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			tw := tar.NewWriter(zw)
			tc.hdr.ModTime = time.Now()
			if err := tw.WriteHeader(&tc.hdr); err != nil {
				t.Fatal(err)
			}
			tw.Close()
			zw.Close()
			p := filepath.Join(t.TempDir(), "bad.tar.gz")
			if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			if err := untarGz(p, filepath.Join(out, "in")); err == nil || !strings.Contains(err.Error(), p) {
				t.Fatalf("accepted, or refused without naming the archive: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(out, "evil")); err == nil {
				t.Fatal("a file was written outside the folder")
			}
		})
	}
}
