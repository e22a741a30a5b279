package datasets

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// maxNestedZip bounds an archive read into memory from inside another one (MetaLWOZ's are under 1 MB).
const maxNestedZip = 1 << 30

// openFile opens path, decompressing it when its name ends in .gz, so that x.json and x.json.gz read alike.
func openFile(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, nil
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: not gzip: %w", path, err)
	}
	return gzipFile{gz, f}, nil
}

type gzipFile struct {
	*gzip.Reader
	f *os.File
}

func (g gzipFile) Close() error {
	err := g.Reader.Close()
	if cerr := g.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readFile opens path (see openFile) and hands its content to parse.
func readFile(path string, parse func(io.Reader) error) error {
	rc, err := openFile(path)
	if err != nil {
		return err
	}
	defer rc.Close()
	return parse(rc)
}

// openZip opens an archive for reading in place.
func openZip(path string) (*zip.ReadCloser, error) {
	zr, err := zip.OpenReader(path)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // nothing is unpacked, so odd names do no harm
		return nil, fmt.Errorf("%s: not a readable zip archive: %w", path, err)
	}
	return zr, nil
}

// readMember hands the content of member f to parse; where names the archive in errors.
func readMember(where string, f *zip.File, parse func(io.Reader) error) error {
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("%s!%s: %w", where, f.Name, err)
	}
	defer rc.Close()
	return parse(rc)
}

// nestedZip reads member f, itself an archive, into memory and opens it there: nothing is unpacked to disk.
func nestedZip(where string, f *zip.File) (*zip.Reader, error) {
	name := where + "!" + f.Name
	if f.UncompressedSize64 > maxNestedZip {
		return nil, fmt.Errorf("%s: nested archive of %d bytes is too large to read in memory", name, f.UncompressedSize64)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxNestedZip))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fmt.Errorf("%s: not a readable zip archive: %w", name, err)
	}
	return zr, nil
}

// globJSON returns the files in each of dirs whose names match pattern with .json or .json.gz after it,
// sorted within a folder, the folders in order; where both x.json and x.json.gz exist, only x.json is read.
func globJSON(pattern string, dirs ...string) ([]string, error) {
	var out []string
	for _, dir := range dirs {
		var files []string
		plain := map[string]bool{}
		for _, ext := range []string{".json", ".json.gz"} {
			ms, err := filepath.Glob(filepath.Join(dir, pattern+ext))
			if err != nil {
				return nil, err
			}
			for _, m := range ms {
				if ext == ".json" {
					plain[m] = true
				} else if plain[strings.TrimSuffix(m, ".gz")] {
					continue
				}
				files = append(files, m)
			}
		}
		sort.Strings(files)
		out = append(out, files...)
	}
	return out, nil
}

// jsonFile returns base.json or base.json.gz, whichever exists (the plain one first), or "".
func jsonFile(base string) string {
	for _, p := range []string{base + ".json", base + ".json.gz"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// existing returns the paths that exist as files.
func existing(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// baseNoExt returns a file's name without its folder, .gz and extension: "data/hotels.json.gz" -> "hotels".
func baseNoExt(path string) string {
	b := filepath.Base(path)
	b = strings.TrimSuffix(b, ".gz")
	return strings.TrimSuffix(b, filepath.Ext(b))
}

// readFiles parses plain (or .gz) files in order; parse gets each file's source and path.
func readFiles(corpus string, files []string, opt ReadOptions,
	parse func(src *source, path string, r io.Reader) ([]Dialogue, error)) ([]Dialogue, error) {
	var all []Dialogue
	for _, f := range files {
		src := newSource(corpus, f, opt)
		err := readFile(f, func(r io.Reader) error {
			ds, err := parse(src, f, r)
			all = append(all, ds...)
			return err
		})
		src.finish()
		if err != nil {
			return nil, err
		}
	}
	return all, nil
}

// readZipMembers parses the members of an archive whose base names are in names, in that order (a member
// may sit in a folder of the archive); at least one must be there.
func readZipMembers(corpus, zipPath string, names []string, opt ReadOptions,
	parse func(*source, io.Reader) ([]Dialogue, error)) ([]Dialogue, error) {
	zr, err := openZip(zipPath)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	var all []Dialogue
	found := 0
	for _, name := range names {
		f := findMemberBase(&zr.Reader, name)
		if f == nil {
			continue
		}
		found++
		src := newSource(corpus, zipPath+"!"+f.Name, opt)
		err := readMember(zipPath, f, func(r io.Reader) error {
			ds, err := parse(src, r)
			all = append(all, ds...)
			return err
		})
		src.finish()
		if err != nil {
			return nil, err
		}
	}
	if found == 0 {
		return nil, fmt.Errorf("%s: none of %v in the archive", zipPath, names)
	}
	return all, nil
}

// findMemberBase returns the first member whose base name is base, or nil.
func findMemberBase(zr *zip.Reader, base string) *zip.File {
	for _, f := range zr.File {
		if path.Base(f.Name) == base && !strings.HasSuffix(f.Name, "/") {
			return f
		}
	}
	return nil
}
