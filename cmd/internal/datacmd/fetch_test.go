package datacmd

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"convrep/datasets/fetch"
	"convrep/internal/shared"
)

// upstream is a fake of the public sources: it serves each manifest entry at /OWNER/REPO/COMMIT/PATH with
// the bytes upstream has (the ../shared copy, decompressed where ../shared gzipped it), honouring ranges.
// corrupt flips a byte of one path; cut sends only the first half of one path, once, then drops the
// connection.
type upstream struct {
	files        map[string]string // URL path → file under ../shared/data
	gz           map[string]bool
	corrupt, cut string
	mu           sync.Mutex
	ranges, gets int
	cutDone      bool
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	root := shared.MustPath(t, "data")
	es, err := fetch.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{files: map[string]string{}, gz: map[string]bool{}}
	for _, e := range es {
		p := "/" + e.Repo + "/" + e.Commit + "/" + e.Upstream
		local := filepath.Join(root, filepath.FromSlash(e.Path))
		if _, err := os.Stat(local); err != nil {
			local += ".gz"
			u.gz[p] = true
		}
		u.files[p] = local
	}
	return u
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	local, ok := u.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := os.ReadFile(local)
	if err == nil && u.gz[r.URL.Path] {
		var z *gzip.Reader
		if z, err = gzip.NewReader(bytes.NewReader(b)); err == nil {
			b, err = io.ReadAll(z)
		}
	}
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	u.mu.Lock()
	u.gets++
	if r.Header.Get("Range") != "" {
		u.ranges++
	}
	cut := r.URL.Path == u.cut && !u.cutDone
	u.cutDone = u.cutDone || cut
	u.mu.Unlock()
	if r.URL.Path == u.corrupt {
		b = bytes.Clone(b)
		b[len(b)/2] ^= 0xff
	}
	if cut {
		// Promise the whole file, send half, and hang up: a download broken off.
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return
	}
	http.ServeContent(w, r, "", fileTime, bytes.NewReader(b))
}

func fetchArgs(base, to string, more ...string) []string {
	return append([]string{"fetch", "--base-url", base, "--to", to, "--corpora", "woz2,camrest676", "--eval", "", "--vocab=false"}, more...)
}

// Fetching from the sources gives data that `data stats` reads to the same dialogues and turns as
// ../shared/data; a broken-off download resumes with a range request; a second run downloads nothing.
func TestFetchResumesAndMatchesShared(t *testing.T) {
	up := newUpstream(t)
	up.cut = "/nmrksic/neural-belief-tracker/63b5933d867fd9dacc2bfadcc5f6be3a3ef8ee77/data/woz/woz_train_en.json"
	srv := httptest.NewServer(up)
	defer srv.Close()
	to := t.TempDir()
	code, _, stderr := runData(fetchArgs(srv.URL, to)...)
	if code != 1 {
		t.Fatalf("a broken-off download: exit %d (%s), want 1", code, stderr)
	}
	code, stdout, stderr := runData(fetchArgs(srv.URL, to)...)
	if code != 0 {
		t.Fatalf("the second run: exit %d: %s", code, stderr)
	}
	if up.ranges != 1 {
		t.Errorf("%d range requests, want 1 (the broken-off file resumed)", up.ranges)
	}
	if !strings.Contains(stdout, "--set data.root="+filepath.Join(to, "pretrain")) {
		t.Errorf("no data.root to use in %q", stdout)
	}
	gets := up.gets
	if code, _, stderr := runData(fetchArgs(srv.URL, to)...); code != 0 || up.gets != gets {
		t.Errorf("a third run: exit %d, %d more requests (%s); want nothing downloaded", code, up.gets-gets, stderr)
	}
	_, want, _ := runData("stats", "--data", shared.MustPath(t, "data", "pretrain"), "--corpora", "woz2,camrest676")
	_, got, _ := runData("stats", "--data", filepath.Join(to, "pretrain"), "--corpora", "woz2,camrest676")
	if got == "" || got != want {
		t.Errorf("stats of the fetched data:\n%s\nof ../shared/data:\n%s", got, want)
	}
	if left, _ := filepath.Glob(filepath.Join(to, "pretrain", "*", "*", "*", "*.part")); len(left) > 0 {
		t.Errorf("partial files left: %v", left)
	}
}

// A file whose bytes differ from the manifest's hash is refused, named, and not kept.
func TestFetchRefusesCorruptFile(t *testing.T) {
	up := newUpstream(t)
	up.corrupt = "/WING-NUS/sequicity/e3ae9590c6a7553fc22c85f5ca1d7e6c9324ad45/data/CamRest676/CamRest676.json"
	srv := httptest.NewServer(up)
	defer srv.Close()
	to := t.TempDir()
	var logged bytes.Buffer
	code, _, _ := runDataLog(&logged, fetchArgs(srv.URL, to)...)
	dest := filepath.Join(to, "pretrain", "camrest676", "data", "CamRest676", "CamRest676.json")
	if code != 1 || !strings.Contains(logged.String(), "CamRest676.json") || !strings.Contains(logged.String(), "SHA-256") {
		t.Errorf("exit %d, log %s; want a failure naming the file and its hash", code, logged.String())
	}
	for _, p := range []string{dest, dest + ".part"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s kept", p)
		}
	}
}

// An unreachable source is an error that names it and the manual step.
func TestFetchUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	l.Close()
	var logged bytes.Buffer
	code, _, _ := runDataLog(&logged, fetchArgs(base, t.TempDir(), "--corpora", "woz2")...)
	if code != 1 || !strings.Contains(logged.String(), "unreachable") || !strings.Contains(logged.String(), "by hand") {
		t.Errorf("exit %d, log %s", code, logged.String())
	}
}

// fileTime is the modification time the fake serves (none).
var fileTime time.Time

// runDataLog runs the command with its log going to w.
func runDataLog(w io.Writer, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	log := zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), zapcore.DebugLevel))
	code := run(args, &out, &errOut, log)
	return code, out.String(), errOut.String()
}
