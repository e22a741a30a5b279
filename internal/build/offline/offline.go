package offline

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"convrep/internal/build/gotchpatch"
)

// Env names a bundle made by `setup bundle` (bundle.go). With it the set-up reaches no network: gotch's
// source comes from the bundle instead of `go mod download`, and the vendored modules are unpacked into
// vendor/, where the go command finds them by itself (a module whose go.mod says go ≥ 1.14 builds with
// -mod=vendor when vendor/modules.txt agrees with it), so a plain `go build ./cmd/...` works afterwards.
const Env = "CONVREP_OFFLINE"

// Bundle is an unpacked bundle.
type Bundle struct {
	dir string
	m   manifest
}

// Open reads the bundle named by $CONVREP_OFFLINE; nil when it is unset.
func Open(root string) (*Bundle, error) {
	dir := os.Getenv(Env)
	if dir == "" {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, bundleManifest))
	if err != nil {
		return nil, fmt.Errorf("%s=%s: not a bundle of `go run ./cmd/setup bundle`: %w", Env, dir, err)
	}
	o := &Bundle{dir: dir}
	if err := json.Unmarshal(b, &o.m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, bundleManifest), err)
	}
	if o.m.GotchVersion != gotchpatch.Version {
		return nil, fmt.Errorf("%s=%s holds gotch %s, this set-up needs %s: make the bundle again from this checkout", Env, dir, o.m.GotchVersion, gotchpatch.Version)
	}
	if o.m.Module != goModText(root) {
		return nil, fmt.Errorf("%s=%s was made for another go.mod than %s: make the bundle again from this checkout (go run ./cmd/setup bundle --to DIR)",
			Env, dir, filepath.Join(root, "go.mod"))
	}
	return o, nil
}

// GotchSource unpacks gotch's source into third_party/gotch-src (once per bundle) and returns its folder.
func (o *Bundle) GotchSource(root string) (string, error) {
	dst := filepath.Join(root, "third_party", "gotch-src")
	mark := filepath.Join(dst, ".bundle")
	want := o.m.Made.String()
	if b, err := os.ReadFile(mark); err == nil && string(b) == want {
		return filepath.Join(dst, "gotch"), nil
	}
	if err := os.RemoveAll(dst); err != nil {
		return "", err
	}
	if err := untarGz(filepath.Join(o.dir, GotchFile), dst); err != nil {
		return "", err
	}
	if err := os.WriteFile(mark, []byte(want), 0o644); err != nil {
		return "", err
	}
	return filepath.Join(dst, "gotch"), nil
}

// Vendor unpacks the vendored modules into root/vendor, with vendor/github.com/sugarme/gotch a link to the
// set-up's patched copy (go.mod's replace directive names it; in vendor mode the go command reads every
// dependency, replaced ones too, from vendor/).
func (o *Bundle) Vendor(root string) error {
	dst := filepath.Join(root, "vendor")
	tmp := dst + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := untarGz(filepath.Join(o.dir, VendorFile), tmp); err != nil {
		return err
	}
	link := filepath.Join(tmp, "vendor", filepath.FromSlash(vendorGotch))
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(filepath.Join(dst, filepath.FromSlash(vendorGotch))), filepath.Join(root, gotchpatch.Dir))
	if err != nil {
		return err
	}
	if err := os.Symlink(rel, link); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(tmp, "vendor"), dst); err != nil {
		return err
	}
	return os.RemoveAll(tmp)
}

// untarGz unpacks a .tar.gz made by writeTarGz into dst, refusing any name that would leave dst.
func untarGz(path, dst string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		name := filepath.FromSlash(hdr.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("%s: entry %q leaves the folder it unpacks into", path, hdr.Name)
		}
		target := filepath.Join(dst, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeEntry(target, tr, os.FileMode(hdr.Mode).Perm())
		case tar.TypeSymlink:
			if filepath.IsAbs(hdr.Linkname) || !filepath.IsLocal(filepath.Join(filepath.Dir(name), hdr.Linkname)) {
				return fmt.Errorf("%s: link %q points out of the folder it unpacks into", path, hdr.Name)
			}
			if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
				err = os.Symlink(hdr.Linkname, target)
			}
		default:
			return fmt.Errorf("%s: entry %q is of a kind a bundle never holds (%c)", path, hdr.Name, hdr.Typeflag)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
}

func writeEntry(target string, r io.Reader, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Describe names the bundle for the set-up's report.
func (o *Bundle) Describe() string {
	s := fmt.Sprintf("offline bundle %s (made %s with %s", o.dir, o.m.Made.Format("2006-01-02"), o.m.GoVersion)
	if o.m.Toolchain {
		s += ", toolchain included"
	}
	return strings.TrimSpace(s) + ")"
}
