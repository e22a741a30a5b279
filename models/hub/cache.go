package hub

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// configFile is the one file every model folder must hold.
const configFile = "config.json"

// weightFiles are the single-file checkpoints, in order of preference.
var weightFiles = []string{"model.safetensors", "pytorch_model.bin"}

// tokenizerFiles are fetched when the repo has them; a model needs only some.
var tokenizerFiles = []string{
	"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
	"vocab.txt", "vocab.json", "merges.txt", "added_tokens.json",
}

// cacheRepo is one model's folder in the HuggingFace hub cache:
//
//	models--org--name/refs/<revision>          the commit hash the revision points at
//	models--org--name/blobs/<etag>             file contents, named by ETag
//	models--org--name/snapshots/<commit>/<f>   symlinks to ../../blobs/<etag>
type cacheRepo struct {
	dir string
}

func newCacheRepo(root, repo string) cacheRepo {
	return cacheRepo{dir: filepath.Join(root, repoFolderName(repo))}
}

func (c cacheRepo) refPath(rev string) string {
	return filepath.Join(c.dir, "refs", filepath.FromSlash(rev))
}

func (c cacheRepo) snapshotsDir() string { return filepath.Join(c.dir, "snapshots") }

func (c cacheRepo) snapshotDir(commit string) string {
	return filepath.Join(c.snapshotsDir(), commit)
}

func (c cacheRepo) blobPath(etag string) string { return filepath.Join(c.dir, "blobs", etag) }

// lookup returns the complete snapshot that rev points at, or "" and what was
// examined and why it did not do. A snapshot is complete when it holds
// config.json and a weight file; tokenizer files are optional.
func (c cacheRepo) lookup(rev string) (string, Candidate) {
	commit := rev
	if !commitPattern.MatchString(rev) {
		b, err := os.ReadFile(c.refPath(rev))
		if err != nil {
			return "", Candidate{Kind: "HF cache", Path: c.snapshotsDir(),
				Why: fmt.Sprintf("no refs/%s, nothing downloaded at this revision", rev)}
		}
		commit = strings.TrimSpace(string(b))
		if !commitPattern.MatchString(commit) {
			return "", Candidate{Kind: "HF cache", Path: c.refPath(rev),
				Why: fmt.Sprintf("holds %q, not a commit hash", commit)}
		}
	}
	dir := c.snapshotDir(commit)
	if !isFile(filepath.Join(dir, configFile)) {
		return "", Candidate{Kind: "HF cache", Path: dir, Why: "no " + configFile}
	}
	for _, w := range weightFiles {
		if isFile(filepath.Join(dir, w)) {
			return dir, Candidate{}
		}
	}
	return "", Candidate{Kind: "HF cache", Path: dir, Why: "no " + strings.Join(weightFiles, " or ")}
}

// writeRef records that rev points at commit, replacing the file atomically
// so a reader never sees half a hash. Each writer has its own temporary
// file, so concurrent resolves of one model cannot rename each other's.
func (c cacheRepo) writeRef(rev, commit string) error {
	p := c.refPath(rev)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("hub: create refs folder for %s: %w", p, err)
	}
	return replaceFile(p, func(f *os.File) error {
		_, err := f.WriteString(commit)
		return err
	})
}

// link makes snapshots/<commit>/<file> point at the blob with a relative
// symlink, as the Python tools do, so the cache can be moved as a whole.
// Where symlinks are not allowed the blob is copied instead. The new entry
// is made under a temporary name and renamed over the old, so a concurrent
// resolve never finds the entry missing nor writes through it.
func (c cacheRepo) link(commit, file, etag string) error {
	dst := filepath.Join(c.snapshotDir(commit), filepath.FromSlash(file))
	blob := c.blobPath(etag)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("hub: create snapshot folder for %s: %w", dst, err)
	}
	rel, err := filepath.Rel(filepath.Dir(dst), blob)
	if err != nil {
		return fmt.Errorf("hub: link %s to %s: %w", dst, blob, err)
	}
	if err := symlinkOver(rel, dst); err == nil {
		return nil
	}
	return replaceFile(dst, func(f *os.File) error { return copyInto(f, blob) })
}

// symlinkOver makes dst a symlink to target, replacing whatever dst was.
func symlinkOver(target, dst string) error {
	tmp := fmt.Sprintf("%s.%d.%d.link", dst, os.Getpid(), linkSeq.Add(1))
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hub: link %s: %w", dst, err)
	}
	return nil
}

// linkSeq tells apart the temporary links of goroutines of one process.
var linkSeq atomic.Int64

// replaceFile writes p through a fresh temporary file beside it and renames
// that into place; p is never opened, so a symlink at p is not followed.
func replaceFile(p string, write func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+".*.tmp")
	if err != nil {
		return fmt.Errorf("hub: write %s: %w", p, err)
	}
	err = f.Chmod(0o644) // CreateTemp makes it private; cache files are not
	if err == nil {
		err = write(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("hub: write %s: %w", p, err)
	}
	return nil
}

func copyInto(out *os.File, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	_, err = io.Copy(out, in)
	return err
}

// isFile reports whether p (after following symlinks) is a regular file; a
// dangling symlink into a deleted blob does not count.
func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
