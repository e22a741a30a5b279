package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	retryDelay = 10 * time.Millisecond // keep retry tests fast
	os.Exit(m.Run())
}

// rangeRequests lists the Range headers the CDN got for one blob.
func rangeRequests(reqs []string, sha string) []string {
	prefix := "GET /blobs/" + sha
	var out []string
	for _, r := range reqs {
		if rest, ok := strings.CutPrefix(r, prefix); ok {
			out = append(out, strings.TrimPrefix(rest, " "))
		}
	}
	return out
}

func TestResolveResumesBrokenDownload(t *testing.T) {
	bert := readFixture(t, "tiny-bert", bertNames...)
	weights := bert["model.safetensors"]
	sha := sha256Hex(weights)
	half := len(weights) / 2
	want := without(bert, "pytorch_model.bin")

	tests := []struct {
		name        string
		maxAttempts int
		fault       cdnFault
		// firstFails: the first Resolve gives up, leaving a partial blob the
		// second Resolve must finish with a Range request.
		firstFails bool
		wantRanges []string
	}{
		{
			name: "retried within one call", maxAttempts: 3,
			fault: func(w http.ResponseWriter, r *http.Request, data []byte, attempt int) bool {
				if attempt == 1 {
					cutAfterHalf(w, data)
				}
				return false
			},
			wantRanges: []string{fmt.Sprintf("bytes=%d-", half)},
		},
		{
			name: "resumed by the next call", maxAttempts: 1,
			fault: func(w http.ResponseWriter, r *http.Request, data []byte, attempt int) bool {
				if attempt == 1 {
					cutAfterHalf(w, data)
				}
				return false
			},
			firstFails: true,
			wantRanges: []string{fmt.Sprintf("bytes=%d-", half)},
		},
		{
			name: "server ignoring Range restarts from zero", maxAttempts: 3,
			fault: func(w http.ResponseWriter, r *http.Request, data []byte, attempt int) bool {
				if attempt == 1 {
					cutAfterHalf(w, data)
				}
				r.Header.Del("Range") // answer 200 with the whole file
				return false
			},
			wantRanges: []string{fmt.Sprintf("bytes=%d-", half)},
		},
		{
			name: "cut twice, resumed twice", maxAttempts: 3,
			fault: func(w http.ResponseWriter, r *http.Request, data []byte, attempt int) bool {
				switch attempt {
				case 1:
					cutAfterHalf(w, data)
				case 2: // from half, send a quarter of the file then cut
					w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", half, len(data)-1, len(data)))
					w.Header().Set("Content-Length", fmt.Sprint(len(data)-half))
					w.WriteHeader(http.StatusPartialContent)
					w.Write(data[half : half+len(data)/4])
					w.(http.Flusher).Flush()
					panic(http.ErrAbortHandler)
				}
				return false
			},
			wantRanges: []string{fmt.Sprintf("bytes=%d-", half), fmt.Sprintf("bytes=%d-", half+len(weights)/4)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hub := newFakeHub(t)
			hub.addRepo("convrep/tiny-bert", commitA, bert)
			hub.setFault(tc.fault)
			cache := t.TempDir()
			opt := Options{Endpoint: hub.main.URL, CacheDir: cache, MaxAttempts: tc.maxAttempts}
			repoDir := filepath.Join(cache, repoFolderName("convrep/tiny-bert"))
			partial := filepath.Join(repoDir, "blobs", sha+".incomplete")

			dir, err := Resolve(context.Background(), "convrep/tiny-bert", opt)
			if tc.firstFails {
				if err == nil {
					t.Fatal("first Resolve succeeded despite the cut connection")
				}
				if !strings.Contains(err.Error(), "model.safetensors") {
					t.Errorf("error does not name the file: %v", err)
				}
				fi, statErr := os.Stat(partial)
				if statErr != nil || fi.Size() != int64(half) {
					t.Fatalf("partial blob after the cut: %v, %v; want %d bytes", fi, statErr, half)
				}
				if got := readRef(t, cache, "convrep/tiny-bert", "main"); got != "" {
					t.Errorf("refs/main written for an incomplete snapshot: %q", got)
				}
				dir, err = Resolve(context.Background(), "convrep/tiny-bert", opt)
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got := rangeRequests(hub.requests(), sha); len(got) == 0 || got[0] != "" || !slices.Equal(got[1:], tc.wantRanges) {
				t.Errorf("CDN requests' Range headers = %q, want none then %q", got, tc.wantRanges)
			}
			if dir != filepath.Join(repoDir, "snapshots", commitA) {
				t.Errorf("dir = %s", dir)
			}
			checkSnapshot(t, cache, "convrep/tiny-bert", commitA, want)
		})
	}
}

func TestResolveCancelKeepsPartialForResume(t *testing.T) {
	bert := readFixture(t, "tiny-bert", bertNames...)
	weights := bert["model.safetensors"]
	sha := sha256Hex(weights)
	half := len(weights) / 2
	hub := newFakeHub(t)
	hub.addRepo("convrep/tiny-bert", commitA, bert)
	// First GET: half the file, then stall until the client goes away.
	hub.setFault(func(w http.ResponseWriter, r *http.Request, data []byte, attempt int) bool {
		if attempt != 1 {
			return false
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:half])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return true
	})
	cache := t.TempDir()
	opt := Options{Endpoint: hub.main.URL, CacheDir: cache}
	partial := filepath.Join(cache, repoFolderName("convrep/tiny-bert"), "blobs", sha+".incomplete")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // cancel once the first half is on disk
		for {
			if fi, err := os.Stat(partial); err == nil && fi.Size() >= int64(half) {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	_, err := Resolve(ctx, "convrep/tiny-bert", opt)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Resolve after cancel: %v, want context.Canceled", err)
	}
	if fi, err := os.Stat(partial); err != nil || fi.Size() != int64(half) {
		t.Fatalf("partial blob after cancel: %v, %v; want %d bytes", fi, err, half)
	}

	if _, err := Resolve(context.Background(), "convrep/tiny-bert", opt); err != nil {
		t.Fatalf("Resolve after resume: %v", err)
	}
	if got := rangeRequests(hub.requests(), sha); !slices.Equal(got, []string{"", fmt.Sprintf("bytes=%d-", half)}) {
		t.Errorf("CDN Range headers = %q", got)
	}
	checkSnapshot(t, cache, "convrep/tiny-bert", commitA, without(bert, "pytorch_model.bin"))
}

func TestResolveRejectsCorruptDownload(t *testing.T) {
	bert := readFixture(t, "tiny-bert", bertNames...)
	roberta := readFixture(t, "tiny-roberta", robertaNames...)
	tests := []struct {
		name, repo, file string
		files            map[string][]byte
		corrupt          func([]byte) []byte
	}{
		{name: "one flipped byte in safetensors", repo: "convrep/tiny-bert", file: "model.safetensors", files: bert,
			corrupt: func(b []byte) []byte { b[len(b)/3] ^= 0x01; return b }},
		{name: "zeroed pytorch_model.bin", repo: "tiny-roberta", file: "pytorch_model.bin", files: roberta,
			corrupt: func(b []byte) []byte { clear(b); return b }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			good := tc.files[tc.file]
			bad := tc.corrupt(slices.Clone(good))
			hub := newFakeHub(t)
			hub.addRepo(tc.repo, commitB, tc.files)
			hub.setFault(func(w http.ResponseWriter, r *http.Request, data []byte, attempt int) bool {
				w.Header().Set("Content-Length", fmt.Sprint(len(bad)))
				w.Write(bad)
				return true
			})
			cache := t.TempDir()
			_, err := Resolve(context.Background(), tc.repo, Options{Endpoint: hub.main.URL, CacheDir: cache})
			var ce *ChecksumError
			if !errors.As(err, &ce) {
				t.Fatalf("Resolve: %v, want a *ChecksumError", err)
			}
			wantSum, gotSum := sha256Hex(good), sha256Hex(bad)
			if ce.File != tc.file || ce.Expected != wantSum || ce.Got != gotSum {
				t.Errorf("ChecksumError = %+v, want file %s expected %s got %s", ce, tc.file, wantSum, gotSum)
			}
			for _, s := range []string{tc.file, wantSum, gotSum} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %s", err, s)
				}
			}
			blobs := dirNames(t, filepath.Join(cache, repoFolderName(tc.repo), "blobs"))
			for _, b := range blobs {
				if strings.HasPrefix(b, wantSum) || strings.HasSuffix(b, ".incomplete") {
					t.Errorf("bad blob left in the cache: %s", b)
				}
			}
			if got := readRef(t, cache, tc.repo, "main"); got != "" {
				t.Errorf("refs/main written after a failed download: %q", got)
			}
		})
	}
}
