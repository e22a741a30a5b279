package hub

import (
	"bytes"
	"convrep/internal/shared"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixturesDir is ../shared/fixtures; a missing folder fails the test.
func fixturesDir(t *testing.T) string { return shared.MustPath(t, "fixtures") }

// readFixture loads the named files of one fixture model.
func readFixture(t *testing.T, model string, names ...string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(fixturesDir(t), model, n))
		if err != nil {
			t.Fatalf("read fixture: %v", err)
		}
		files[n] = b
	}
	return files
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// gitBlobSHA1 is the ETag the hub gives a file stored in git rather than LFS.
func gitBlobSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// isLFS says which files the fake hub stores in LFS, as the real one does
// for weights.
func isLFS(name string) bool {
	return strings.HasSuffix(name, ".safetensors") || strings.HasSuffix(name, ".bin")
}

type fakeRepo struct {
	commit string
	files  map[string][]byte
}

// cdnFault may take over a CDN response; it returns false to let the
// normal one go out. attempt counts the GETs of that blob, from 1.
type cdnFault func(w http.ResponseWriter, r *http.Request, data []byte, attempt int) bool

// fakeHub answers like huggingface.co: /{repo}/resolve/{rev}/{file} with
// X-Repo-Commit, ETags (the sha256 for LFS files, a git sha1 otherwise),
// 401/404 with X-Error-Code, Range support, and LFS files redirected to a
// second server standing for the CDN.
type fakeHub struct {
	t       *testing.T
	main    *httptest.Server
	cdn     *httptest.Server
	repos   map[string]*fakeRepo
	blobs   map[string][]byte // sha256 -> content of the LFS files
	renames map[string]string // old repo id -> new, answered with a relative redirect

	mu       sync.Mutex
	log      []string // "METHOD path [Range]" per request, both servers
	auth     []string // Authorization headers seen by the main server
	fault    cdnFault
	gitFault cdnFault // the same for GETs of files the main server holds in git
	attempts map[string]int
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{t: t, repos: map[string]*fakeRepo{}, renames: map[string]string{}, blobs: map[string][]byte{}, attempts: map[string]int{}}
	h.main = httptest.NewServer(http.HandlerFunc(h.serveHub))
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	t.Cleanup(h.main.Close)
	t.Cleanup(h.cdn.Close)
	return h
}

func (h *fakeHub) addRepo(id, commit string, files map[string][]byte) {
	h.repos[id] = &fakeRepo{commit: commit, files: files}
	for name, b := range files {
		if isLFS(name) {
			h.blobs[sha256Hex(b)] = b
		}
	}
}

func (h *fakeHub) setFault(f cdnFault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fault = f
}

func (h *fakeHub) record(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := r.Method + " " + r.URL.Path
	if rg := r.Header.Get("Range"); rg != "" {
		line += " " + rg
	}
	h.log = append(h.log, line)
	if r.Host == h.main.Listener.Addr().String() {
		h.auth = append(h.auth, r.Header.Get("Authorization"))
	}
}

func (h *fakeHub) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.log...)
}

func (h *fakeHub) authHeaders() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.auth...)
}

func (h *fakeHub) resetLog() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log, h.auth = nil, nil
}

func (h *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.record(r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	path := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	repoID, rest, ok := strings.Cut(path, "/resolve/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	escRev, escFile, _ := strings.Cut(rest, "/")
	rev, err1 := url.PathUnescape(escRev)
	file, err2 := url.PathUnescape(escFile)
	if err1 != nil || err2 != nil {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	if to, ok := h.renames[repoID]; ok {
		w.Header().Set("Location", "/"+to+"/resolve/"+escRev+"/"+escFile)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	repo := h.repos[repoID]
	if repo == nil {
		// The hub hides whether a repo exists from anonymous callers.
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository not found", http.StatusUnauthorized)
		return
	}
	if rev != "main" && rev != repo.commit {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, "Invalid rev id", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", repo.commit)
	data, ok := repo.files[file]
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	if isLFS(file) {
		sum := etagOf(file, data)
		w.Header().Set("ETag", `"`+sum+`"`)
		w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(data)))
		w.Header().Set("Location", h.cdn.URL+"/blobs/"+sum)
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+gitBlobSHA1(data)+`"`)
	h.mu.Lock()
	fault := h.gitFault
	h.mu.Unlock()
	if fault != nil && r.Method == http.MethodGet && fault(w, r, data, 0) {
		return
	}
	http.ServeContent(w, r, file, time.Time{}, bytes.NewReader(data))
}

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.record(r)
	sum := strings.TrimPrefix(r.URL.Path, "/blobs/")
	data, ok := h.blobs[sum]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.mu.Lock()
	h.attempts[sum]++
	attempt, fault := h.attempts[sum], h.fault
	h.mu.Unlock()
	if fault != nil && fault(w, r, data, attempt) {
		return
	}
	http.ServeContent(w, r, sum, time.Time{}, bytes.NewReader(data))
}

// cutAfterHalf sends a 200 announcing the whole file, half of it, and drops
// the connection, like a network failure mid-download.
func cutAfterHalf(w http.ResponseWriter, data []byte) {
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data[:len(data)/2])
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}
