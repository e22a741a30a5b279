// Package fetch downloads the data convrep reads from its public sources and checks every file against the
// manifest: the list of the files of the pretraining corpora, the evaluation sets and the vocabularies, each with
// its size, SHA-256 and the GitHub repository, commit and path it comes from (manifest.tsv, embedded). The
// manifest is rebuilt from a data folder whose folders carry SOURCE.txt files (../shared/data) by Build. The
// data command's fetch and manifest (cmd/internal/datacmd) parse the flags and call this package.
package fetch

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The manifest lists every file of the data convrep reads, as its public source distributes it: where it
// goes under the data root, its size and SHA-256, and the GitHub repository, commit and path it comes from.
// Fetch (`data fetch`) downloads and verifies by it; Build (`data manifest`) rebuilds it from a data folder
// whose folders carry SOURCE.txt files (../shared/data), so the checksums are those of the copies this project
// tests on.
//
// Two departures of ../shared/data from upstream are undone here (its README): the large JSON files of SGD
// and Taskmaster are stored gzip-compressed there, so their entries name the upstream .json with the size
// and hash of the decompressed bytes; and files over about 4 MiB upstream are absent there, so they are
// absent from the manifest too and fetch cannot get them (the corpora are read without them).
//
//go:embed manifest.tsv
var manifestTSV string

// Manifest is the embedded manifest's entries.
func Manifest() ([]Entry, error) { return Parse(manifestTSV) }

// An Entry is one manifest line: a file of the data.
type Entry struct {
	Path     string // under the data root, as the readers expect it
	Size     int64
	SHA256   string
	Repo     string // owner/name on GitHub
	Commit   string
	Upstream string // the path inside the repository
}

// Header is the manifest's first line.
const Header = "path\tsize\tsha256\trepo\tcommit\tupstream_path"

// Parse reads a manifest's lines; a malformed one is an error naming its line.
func Parse(src string) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(strings.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 {
			if line != Header {
				return nil, fmt.Errorf("manifest line 1: header %q, want %q", line, Header)
			}
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			return nil, fmt.Errorf("manifest line %d: %d fields, want 6", n, len(f))
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || size < 0 {
			return nil, fmt.Errorf("manifest line %d: size %q", n, f[1])
		}
		if len(f[2]) != 64 || strings.Trim(f[2], "0123456789abcdef") != "" {
			return nil, fmt.Errorf("manifest line %d: sha256 %q", n, f[2])
		}
		if !safeRel(f[0]) || !safeRel(f[5]) {
			return nil, fmt.Errorf("manifest line %d: paths must be relative and stay inside their root (%q, %q)", n, f[0], f[5])
		}
		out = append(out, Entry{Path: f[0], Size: size, SHA256: f[2], Repo: f[3], Commit: f[4], Upstream: f[5]})
	}
	return out, sc.Err()
}

// safeRel reports whether p is a clean relative slash path that does not climb out of its root.
func safeRel(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && filepath.ToSlash(filepath.Clean(p)) == p && p != ".." && !strings.HasPrefix(p, "../")
}

// source is one "source: github:OWNER/REPO  commit: SHA" line of a SOURCE.txt.
type source struct{ repo, commit string }

var (
	sourceLine = regexp.MustCompile(`^source: github:(\S+)\s+commit: ([0-9a-f]{40})\s*$`)
	// AmazonQA's SOURCE.txt names one file: "FILE: github:OWNER/REPO commit SHA (path P)".
	fileSourceLine = regexp.MustCompile(`^(\S+): github:(\S+) commit ([0-9a-f]{40}) \(path (\S+)\)`)
)

// gzippedHere are the folders whose .json.gz files are upstream .json files compressed for ../shared.
var gzippedHere = []string{"pretrain/sgd", "pretrain/taskmaster"}

// Write writes es as a manifest.
func Write(w io.Writer, es []Entry) error {
	b := bufio.NewWriter(w)
	fmt.Fprintln(b, Header)
	for _, e := range es {
		fmt.Fprintf(b, "%s\t%d\t%s\t%s\t%s\t%s\n", e.Path, e.Size, e.SHA256, e.Repo, e.Commit, e.Upstream)
	}
	return b.Flush()
}

// Build describes every file under root that a SOURCE.txt in one of its folders accounts for. A
// folder with several sources takes data_ptm/... files from the ToDDAPT repository (whose layout that is)
// and the others from its first source. Files no source accounts for are returned as skipped.
func Build(root string) (es []Entry, skipped []string, err error) {
	sources := map[string][]source{}  // folder → its sources
	single := map[string][2]string{}  // file → repo/commit of a per-file source line
	singlePath := map[string]string{} // file → upstream path of a per-file source line
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "SOURCE.") || !strings.HasSuffix(d.Name(), ".txt") {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		if d.Name() != "SOURCE.txt" {
			// SOURCE.X.txt names the source of the files beside it (not below), under its own folder key.
			rel = filepath.Join(rel, sideSource)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if m := sourceLine.FindStringSubmatch(line); m != nil {
				sources[filepath.ToSlash(rel)] = append(sources[filepath.ToSlash(rel)], source{m[1], m[2]})
			} else if m := fileSourceLine.FindStringSubmatch(line); m != nil {
				f := filepath.ToSlash(filepath.Join(rel, m[1]))
				single[f], singlePath[f] = [2]string{m[2], m[3]}, m[4]
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if isSourceFile(d.Name()) || d.Name() == "README.md" && !strings.Contains(rel, "/") {
			return nil
		}
		e := Entry{Path: rel}
		if rs, ok := single[rel]; ok {
			e.Repo, e.Commit, e.Upstream = rs[0], rs[1], singlePath[rel]
		} else {
			folder, src := sourceOf(rel, sources)
			if src == nil {
				skipped = append(skipped, rel)
				return nil
			}
			e.Repo, e.Commit = src.repo, src.commit
			e.Upstream = strings.TrimPrefix(rel, folder+"/")
			if _, renamed := pickSource(e.Upstream, []source{*src}); renamed {
				e.Upstream = "LICENSE"
			} else if dir, ok := upstreamDirs[e.Repo]; ok && !optional(e.Upstream) {
				e.Upstream = dir + "/" + e.Upstream
			}
		}
		gz := strings.HasSuffix(rel, ".json.gz") && slices.ContainsFunc(gzippedHere, func(f string) bool { return strings.HasPrefix(rel, f+"/") })
		if gz {
			e.Path, e.Upstream = strings.TrimSuffix(e.Path, ".gz"), strings.TrimSuffix(e.Upstream, ".gz")
		}
		e.Size, e.SHA256, err = hashFile(p, gz)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		es = append(es, e)
		return nil
	})
	return es, skipped, err
}

// pickSource is the source of the file at rel in a folder of several, and whether the file is that
// repository's own licence kept under another name: data_ptm/... is the ToDDAPT repository's layout, and
// LICENSE.<repo>... is that repository's LICENSE; the rest comes from the first source.
func pickSource(rel string, srcs []source) (*source, bool) {
	for _, s := range srcs {
		owner, name, _ := strings.Cut(s.repo, "/")
		if tag, ok := strings.CutPrefix(rel, "LICENSE."); ok && (strings.HasPrefix(tag, name) || tag == owner+"-"+name) {
			return &s, true
		}
		if strings.HasPrefix(rel, "data_ptm/") && name == "ToDDAPT" {
			return &s, false
		}
	}
	return &srcs[0], false
}

// sideSource keys the sources of a SOURCE.X.txt: the files beside it, not below.
const sideSource = "(beside)"

func isSourceFile(name string) bool {
	return strings.HasPrefix(name, "SOURCE.") && strings.HasSuffix(name, ".txt")
}

// upstreamDirs are where a repository keeps the files that sit at the top of their folder here.
var upstreamDirs = map[string]string{
	"clinc/nlu-datasets":                     "nlu_datasets/intent_classification",
	"yangpuhai/STN4DST":                      "bert-base-uncased",
	"frank-chris/solving-math-word-problems": "pretrained_models/roberta-base",
}

// optional files (licences and read-mes) are documentation: fetch warns when one cannot be had.
func optional(p string) bool {
	base := strings.ToUpper(filepath.Base(p))
	return strings.HasPrefix(base, "LICENSE") || strings.HasPrefix(base, "README")
}

// sourceOf finds the nearest folder above rel with sources and the one rel comes from; it returns the
// folder the upstream path is relative to.
func sourceOf(rel string, sources map[string][]source) (string, *source) {
	if srcs, ok := sources[filepath.ToSlash(filepath.Join(filepath.Dir(rel), sideSource))]; ok {
		src, _ := pickSource(filepath.Base(rel), srcs)
		return filepath.ToSlash(filepath.Dir(rel)), src
	}
	for dir := filepath.ToSlash(filepath.Dir(rel)); dir != "." && dir != "/"; dir = filepath.ToSlash(filepath.Dir(dir)) {
		srcs, ok := sources[dir]
		if !ok {
			continue
		}
		src, _ := pickSource(strings.TrimPrefix(rel, dir+"/"), srcs)
		return dir, src
	}
	return "", nil
}

// hashFile is the size and SHA-256 of a file's bytes, or of its decompressed bytes when gunzip.
func hashFile(p string, gunzip bool) (int64, string, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	var r io.Reader = f
	if gunzip {
		z, err := gzip.NewReader(f)
		if err != nil {
			return 0, "", err
		}
		defer z.Close()
		r = z
	}
	h := sha256.New()
	n, err := io.Copy(h, r)
	return n, hex.EncodeToString(h.Sum(nil)), err
}
