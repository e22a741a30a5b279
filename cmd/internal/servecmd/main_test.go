package servecmd

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"convrep/internal/shared"
)

func TestParse(t *testing.T) {
	if _, err := parse([]string{"--help"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
	if _, err := parse([]string{"--model", "m", "extra"}, io.Discard); err == nil {
		t.Error("a positional argument was accepted")
	}
	o, err := parse([]string{"--model", "m", "--max-batch-tokens", "100", "--drain-timeout", "3s", "--api-key", "k"}, io.Discard)
	if err != nil || o.Model != "m" || o.cfg.MaxBatchTokens != 100 || o.cfg.DrainTimeout != 3*time.Second || o.cfg.APIKey != "k" || o.addr != "127.0.0.1:8080" || o.cfg.MaxBatchSize != 64 {
		t.Errorf("%+v %v", o, err)
	}
}

// A port in use is an error naming the address, before any model loads.
func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	o, _ := parse([]string{"--model", shared.MustPath(t, "fixtures", "tiny-bert"), "--addr", addr}, io.Discard)
	err = run(context.Background(), o, zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "--addr "+addr+": the address is already in use") {
		t.Errorf("%v, want the address named as in use", err)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	model := shared.MustPath(t, "fixtures", "tiny-bert")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--model is required"},
		{[]string{"--model", model, "--pooling", "max"}, `pooling "max"`},
		{[]string{"--model", model, "--truncation", "middle"}, `--truncation "middle"`},
		{[]string{"--model", model, "--device", "tpu"}, `device "tpu"`},
		{[]string{"--model", model, "--precision", "fp8"}, `--precision "fp8"`},
		{[]string{"--model", "./nowhere"}, "nowhere"},
		{[]string{"--model", model, "--addr", "127.0.0.1:0", "--max-batch-tokens", "8"}, "--max-batch-tokens 8 is less than the longest input"},
	} {
		o, err := parse(tc.args, io.Discard)
		if err == nil {
			err = run(context.Background(), o, zap.NewNop())
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// The first signal ends the context (a drain); the second exits at once.
func TestSignals(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	go watch(sigs, done, cancel, zap.NewNop(), func(code int) { exited <- code })
	sigs <- syscall.SIGTERM
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first signal did not end the context")
	}
	select {
	case <-exited:
		t.Fatal("the first signal exited")
	case <-time.After(50 * time.Millisecond):
	}
	sigs <- syscall.SIGINT
	select {
	case code := <-exited:
		if code == 0 {
			t.Error("the second signal exited with 0")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second signal did not exit")
	}
	close(done)
}

func TestModelNames(t *testing.T) {
	dir := t.TempDir()
	served, aliases := modelNames("", dir+"/", strings.TrimSuffix(dir+"/", "/"), dir)
	base := dir[strings.LastIndex(dir, "/")+1:]
	if served != base || !contains(aliases, dir) {
		t.Errorf("folder: %q %q", served, aliases)
	}
	served, aliases = modelNames("mine", "org/name", "org/name", "/cache/org--name/snapshots/abc")
	if served != "mine" || !contains(aliases, "org/name") {
		t.Errorf("hub name with --served-model-name: %q %q", served, aliases)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The command serves the fixtures' tiny BERT: health turns 200, embeddings answer under the folder's
// name, and the end of its context drains it to a nil return (exit 0).
func TestRunServesAndDrains(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	o, err := parse([]string{"--model", shared.MustPath(t, "fixtures", "tiny-bert"), "--addr", addr, "--drain-timeout", "5s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, zap.NewNop()) }()
	url := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if res, err := http.Get(url + "/health"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("run returned before serving: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("not healthy after 30 s")
		}
	}
	res, err := http.Post(url+"/v1/embeddings", "application/json", strings.NewReader(`{"input": "hello", "model": "tiny-bert"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `"model":"tiny-bert"`) {
		t.Errorf("embeddings: %d %s", res.StatusCode, b)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after a drain: %v, want nil (exit 0)", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}
