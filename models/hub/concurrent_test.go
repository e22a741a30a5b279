package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment of a child process started by TestResolveConcurrentOneCopy.
const (
	childEndpointEnv = "CONVREP_HUB_CHILD_ENDPOINT"
	childCacheEnv    = "CONVREP_HUB_CHILD_CACHE"
)

// TestResolveConcurrentChild is the body of each child process; run alone
// (without the environment) it does nothing.
func TestResolveConcurrentChild(t *testing.T) {
	endpoint, cache := os.Getenv(childEndpointEnv), os.Getenv(childCacheEnv)
	if endpoint == "" {
		t.Skip("only run as a child of TestResolveConcurrentOneCopy")
	}
	dir, err := Resolve(context.Background(), "convrep/tiny-bert", Options{Endpoint: endpoint, CacheDir: cache})
	if err != nil {
		t.Fatalf("child %d: Resolve: %v", os.Getpid(), err)
	}
	fmt.Println("resolved", dir)
}

// slowAfterAllAsked serves the weights in small slow chunks, and only once
// every resolver has asked for them (or after a bound), so all of them are
// at the blob together: one downloads, the others must wait for its lock.
func slowAfterAllAsked(hub *fakeHub, resolvers int) cdnFault {
	return func(w http.ResponseWriter, r *http.Request, data []byte, attempt int) bool {
		deadline := time.Now().Add(20 * time.Second)
		for countHeads(hub, "/model.safetensors") < resolvers && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(http.StatusOK)
		const chunks = 20
		for i := range chunks {
			w.Write(data[i*len(data)/chunks : (i+1)*len(data)/chunks])
			w.(http.Flusher).Flush()
			time.Sleep(10 * time.Millisecond)
		}
		return true
	}
}

func countHeads(hub *fakeHub, suffix string) int {
	n := 0
	for _, r := range hub.requests() {
		if strings.HasPrefix(r, "HEAD ") && strings.HasSuffix(r, suffix) {
			n++
		}
	}
	return n
}

// 8 goroutines and 4 processes resolve one model at once into one cache:
// all succeed, every file is fetched once, and the cache holds one correct
// copy with nothing partial.
func TestResolveConcurrentOneCopy(t *testing.T) {
	const goroutines, processes = 8, 4
	bert := readFixture(t, "tiny-bert", bertNames...)
	hub := newFakeHub(t)
	hub.addRepo("convrep/tiny-bert", commitA, bert)
	hub.setFault(slowAfterAllAsked(hub, goroutines+processes))
	cache := t.TempDir()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines+processes)
	for i := range processes {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestResolveConcurrentChild$", "-test.v")
		cmd.Env = append(os.Environ(), childEndpointEnv+"="+hub.main.URL, childCacheEnv+"="+cache)
		wg.Go(func() {
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("process %d: %v\n%s", i, err, out)
			}
		})
	}
	for i := range goroutines {
		wg.Go(func() {
			if _, err := Resolve(ctx, "convrep/tiny-bert", Options{Endpoint: hub.main.URL, CacheDir: cache}); err != nil {
				errs <- fmt.Errorf("goroutine %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	want := without(bert, "pytorch_model.bin")
	checkSnapshot(t, cache, "convrep/tiny-bert", commitA, want)
	gets := map[string]int{}
	for _, r := range hub.requests() {
		if path, ok := strings.CutPrefix(r, "GET "); ok {
			gets[path]++
		}
	}
	for path, n := range gets {
		if n != 1 {
			t.Errorf("%s fetched %d times, want once", path, n)
		}
	}
	// One GET per file at the hub, plus the weights' at the CDN it redirects to.
	if len(gets) != len(want)+1 || gets["/blobs/"+sha256Hex(want["model.safetensors"])] != 1 {
		t.Errorf("GETs = %v, want one per file of %v and one of the weights' blob", gets, slices.Sorted(maps.Keys(want)))
	}
	if n := countHeads(hub, "/model.safetensors"); n != goroutines+processes {
		t.Errorf("%d resolvers asked for the weights, want %d", n, goroutines+processes)
	}
}

// A server that stops sending is cut off by the idle timeout, and a host
// that never accepts by the connect timeout; both errors name the URL and
// the timeout.
func TestResolveTimeouts(t *testing.T) {
	bert := readFixture(t, "tiny-bert", bertNames...)
	stall := func(half bool) cdnFault {
		return func(w http.ResponseWriter, r *http.Request, data []byte, attempt int) bool {
			if half {
				w.Header().Set("Content-Length", fmt.Sprint(len(data)))
				w.WriteHeader(http.StatusOK)
				w.Write(data[:len(data)/2])
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done()
			return true
		}
	}
	tests := []struct {
		name      string
		fault     cdnFault
		neverDial bool
		phase     string
	}{
		{name: "no headers", fault: stall(false), phase: "idle"},
		{name: "stalls mid-body", fault: stall(true), phase: "idle"},
		{name: "never connects", neverDial: true, phase: "connect"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hub := newFakeHub(t)
			hub.addRepo("convrep/tiny-bert", commitA, bert)
			hub.setFault(tc.fault)
			if tc.neverDial {
				saved := dialContext
				dialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				t.Cleanup(func() { dialContext = saved })
			}
			const limit = 150 * time.Millisecond
			opt := Options{Endpoint: hub.main.URL, CacheDir: t.TempDir(), MaxAttempts: 2,
				ConnectTimeout: limit, IdleTimeout: limit}
			start := time.Now()
			_, err := Resolve(context.Background(), "convrep/tiny-bert", opt)
			took := time.Since(start)
			var te *TimeoutError
			if !errors.As(err, &te) {
				t.Fatalf("Resolve: %v, want a *TimeoutError", err)
			}
			if te.Phase != tc.phase || te.After != limit {
				t.Errorf("TimeoutError = %+v, want phase %s after %v", te, tc.phase, limit)
			}
			// The URL of the file at the hub, which the CDN's is a redirect of.
			for _, s := range []string{hub.main.URL + "/convrep/tiny-bert/resolve/", tc.phase + " timeout", limit.String()} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if took > 5*time.Second {
				t.Errorf("gave up after %v, want about %d × %v", took, opt.MaxAttempts, limit)
			}
		})
	}
}
