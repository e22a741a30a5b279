package hub

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noNetwork is a hub holding no repo, whose request log must stay empty.
func noNetwork(t *testing.T) *fakeHub { return newFakeHub(t) }

func TestResolveLocalFolder(t *testing.T) {
	fx := fixturesDir(t)
	tests := []struct {
		name string
		ref  string
		want string
	}{
		{name: "absolute folder", ref: filepath.Join(fx, "tiny-bert"), want: filepath.Join(fx, "tiny-bert")},
		{name: "folder with trailing slash", ref: filepath.Join(fx, "tiny-roberta") + "/", want: filepath.Join(fx, "tiny-roberta") + "/"},
		{name: "relative folder", ref: "tiny-distilbert", want: "tiny-distilbert"},
	}
	t.Chdir(fx)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hub := noNetwork(t)
			got, err := Resolve(context.Background(), tc.ref, Options{Endpoint: hub.main.URL, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got != tc.want {
				t.Errorf("Resolve = %q, want %q", got, tc.want)
			}
			if reqs := hub.requests(); len(reqs) != 0 {
				t.Errorf("requests for a local folder: %v", reqs)
			}
		})
	}
}

// A folder named like a repo but without config.json is not the model: the
// hub repo of that name is.
func TestResolveFolderWithoutConfigFallsThrough(t *testing.T) {
	roberta := readFixture(t, "tiny-roberta", robertaNames...)
	hub := newFakeHub(t)
	hub.addRepo("tiny-roberta", commitB, roberta)
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "tiny-roberta"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	cache := t.TempDir()
	dir, err := Resolve(context.Background(), "tiny-roberta", Options{Endpoint: hub.main.URL, CacheDir: cache})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if want := filepath.Join(cache, "models--tiny-roberta", "snapshots", commitB); dir != want {
		t.Errorf("Resolve = %s, want %s", dir, want)
	}
}

// writeCache builds a cache entry by hand, as the Python tools would have.
type handCache struct {
	symlinks bool              // snapshot files are symlinks into blobs (else copies)
	refs     map[string]string // revision -> commit
	commit   string
	files    map[string][]byte
}

func (h handCache) write(t *testing.T, root, repo string) {
	t.Helper()
	repoDir := filepath.Join(root, repoFolderName(repo))
	snap := filepath.Join(repoDir, "snapshots", h.commit)
	for _, d := range []string{snap, filepath.Join(repoDir, "blobs"), filepath.Join(repoDir, "refs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range h.files {
		dst := filepath.Join(snap, name)
		if !h.symlinks {
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		etag := etagOf(name, data)
		if err := os.WriteFile(filepath.Join(repoDir, "blobs", etag), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../blobs/"+etag, dst); err != nil {
			t.Fatal(err)
		}
	}
	for rev, commit := range h.refs {
		if err := os.WriteFile(filepath.Join(repoDir, "refs", rev), []byte(commit), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestResolveReusesHandMadeCache(t *testing.T) {
	bert := readFixture(t, "tiny-bert", "config.json", "model.safetensors", "vocab.txt")
	binOnly := readFixture(t, "tiny-bert", "config.json", "pytorch_model.bin")
	tests := []struct {
		name     string
		repo     string
		revision string
		cache    handCache
	}{
		{name: "symlinked snapshot via refs/main", repo: "google/bert_uncased_L-2_H-128_A-2",
			cache: handCache{symlinks: true, refs: map[string]string{"main": commitA}, commit: commitA, files: bert}},
		{name: "plain files, ref with trailing newline", repo: "bert-base-uncased",
			cache: handCache{refs: map[string]string{"main": commitA + "\n"}, commit: commitA, files: bert}},
		{name: "pytorch_model.bin only", repo: "bert-base-uncased",
			cache: handCache{symlinks: true, refs: map[string]string{"main": commitB}, commit: commitB, files: binOnly}},
		{name: "tag revision", repo: "org/model", revision: "v1.0",
			cache: handCache{symlinks: true, refs: map[string]string{"v1.0": commitB}, commit: commitB, files: bert}},
		{name: "commit revision needs no ref", repo: "org/model", revision: commitA,
			cache: handCache{symlinks: true, commit: commitA, files: bert}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.cache.write(t, root, tc.repo)
			hub := noNetwork(t)
			for _, offline := range []bool{false, true} {
				dir, err := Resolve(context.Background(), tc.repo, Options{
					Endpoint: hub.main.URL, CacheDir: root, Revision: tc.revision, Offline: offline})
				if err != nil {
					t.Fatalf("Resolve (offline=%v): %v", offline, err)
				}
				want := filepath.Join(root, repoFolderName(tc.repo), "snapshots", tc.cache.commit)
				if dir != want {
					t.Errorf("Resolve (offline=%v) = %s, want %s", offline, dir, want)
				}
			}
			if reqs := hub.requests(); len(reqs) != 0 {
				t.Errorf("requests despite a cached snapshot: %v", reqs)
			}
		})
	}
}

// A cached snapshot lacking weights is completed online; the blobs it has
// are not fetched again.
func TestResolveCompletesPartialCache(t *testing.T) {
	bert := readFixture(t, "tiny-bert", bertNames...)
	hub := newFakeHub(t)
	hub.addRepo("convrep/tiny-bert", commitA, bert)
	root := t.TempDir()
	handCache{symlinks: true, refs: map[string]string{"main": commitA}, commit: commitA,
		files: map[string][]byte{"config.json": bert["config.json"]}}.write(t, root, "convrep/tiny-bert")

	dir, err := Resolve(context.Background(), "convrep/tiny-bert", Options{Endpoint: hub.main.URL, CacheDir: root})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if want := filepath.Join(root, repoFolderName("convrep/tiny-bert"), "snapshots", commitA); dir != want {
		t.Errorf("Resolve = %s, want %s", dir, want)
	}
	for _, r := range hub.requests() {
		if strings.HasPrefix(r, "GET ") && strings.HasSuffix(r, "/config.json") {
			t.Errorf("config.json fetched again: %s", r)
		}
	}
	checkSnapshot(t, root, "convrep/tiny-bert", commitA, without(bert, "pytorch_model.bin"))
}

func TestResolveNotFound(t *testing.T) {
	bert := readFixture(t, "tiny-bert", "config.json", "vocab.txt")
	hub := newFakeHub(t)
	closed := newFakeHub(t)
	closedURL := closed.main.URL
	closed.main.Close()

	tests := []struct {
		name     string
		ref      string
		endpoint string
		offline  bool
		prepare  func(t *testing.T, root string) // cache contents
		// wantLooked are the paths (relative to the cache root when not
		// absolute) the error must name; wantText more fragments.
		wantLooked []string
		wantText   []string
		wantCause  func(error) bool
	}{
		{name: "offline, empty cache", ref: "bert-base-uncased", endpoint: hub.main.URL, offline: true,
			wantLooked: []string{"models--bert-base-uncased/snapshots"},
			wantText:   []string{"HF_HUB_OFFLINE", "no refs/main", "does not exist"}},
		{name: "endpoint unreachable", ref: "org/name", endpoint: closedURL,
			wantLooked: []string{"models--org--name/snapshots"},
			wantText:   []string{closedURL, "could not be used"},
			wantCause:  func(err error) bool { var s *StatusError; return !errors.As(err, &s) }},
		{name: "repo unknown to the hub", ref: "org/missing", endpoint: hub.main.URL,
			wantLooked: []string{"models--org--missing/snapshots"},
			wantText:   []string{"401", "RepoNotFound", "HF_TOKEN"},
			wantCause:  func(err error) bool { return isStatus(err, http.StatusUnauthorized) }},
		{name: "offline, snapshot without weights", ref: "org/partial", endpoint: hub.main.URL, offline: true,
			prepare: func(t *testing.T, root string) {
				handCache{symlinks: true, refs: map[string]string{"main": commitA}, commit: commitA,
					files: map[string][]byte{"config.json": bert["config.json"]}}.write(t, root, "org/partial")
			},
			wantLooked: []string{"models--org--partial/snapshots/" + commitA},
			wantText:   []string{"no model.safetensors or pytorch_model.bin"}},
		{name: "path that is no repo id", ref: "./no/such/folder", endpoint: hub.main.URL,
			wantText: []string{"not a hub repo id", "git clone"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.prepare != nil {
				tc.prepare(t, root)
			}
			hub.resetLog()
			_, err := Resolve(context.Background(), tc.ref, Options{Endpoint: tc.endpoint, CacheDir: root, Offline: tc.offline})
			var nf *NotFoundError
			if !errors.As(err, &nf) || !errors.Is(err, ErrNotFound) {
				t.Fatalf("Resolve: %v, want a *NotFoundError", err)
			}
			msg := err.Error()
			local, _ := filepath.Abs(tc.ref)
			want := append([]string{local, "git clone", "HF_HOME"}, tc.wantText...)
			for _, p := range tc.wantLooked {
				want = append(want, filepath.Join(root, p))
			}
			for _, s := range want {
				if !strings.Contains(msg, s) {
					t.Errorf("error lacks %q:\n%s", s, msg)
				}
			}
			if len(nf.Looked) != 1+len(tc.wantLooked) {
				t.Errorf("Looked = %+v, want the local folder and %v", nf.Looked, tc.wantLooked)
			}
			if tc.offline && len(hub.requests()) != 0 {
				t.Errorf("offline Resolve made requests: %v", hub.requests())
			}
			if tc.wantCause != nil && (nf.Cause == nil || !tc.wantCause(nf.Cause)) {
				t.Errorf("Cause = %v", nf.Cause)
			}
		})
	}
}

// A repo that has config.json but neither weight file is an error that says
// so, not a NotFoundError about the local paths.
func TestResolveRepoWithoutWeights(t *testing.T) {
	hub := newFakeHub(t)
	hub.addRepo("org/no-weights", commitA, readFixture(t, "tiny-bert", "config.json", "vocab.txt"))
	_, err := Resolve(context.Background(), "org/no-weights", Options{Endpoint: hub.main.URL, CacheDir: t.TempDir()})
	if err == nil || errors.Is(err, ErrNotFound) ||
		!strings.Contains(err.Error(), "model.safetensors") || !strings.Contains(err.Error(), "pytorch_model.bin") {
		t.Fatalf("Resolve: %v, want an error naming the missing weight files", err)
	}
}
