package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"convrep/internal/devtest"
	"convrep/internal/shared"
	"convrep/models"
	"convrep/models/hub"
	"convrep/tokenizers"
)

var tiny struct {
	once sync.Once
	e    *models.Embedder
	err  error
}

// tinyEmbedder is the fixtures' tiny BERT (2 layers, width 32, 64 positions) with mean pooling, loaded once on
// the test device (the CPU, or the GPU under scripts/gpu_check.sh).
func tinyEmbedder(t *testing.T) *models.Embedder {
	t.Helper()
	dir := shared.MustPath(t, "fixtures", "tiny-bert")
	dev := devtest.Device(t)
	tiny.once.Do(func() {
		m, dir, err := models.LoadPretrained(context.Background(), dir, hub.Options{}, models.LoadOptions{Heads: &models.Heads{}, Device: dev})
		if err != nil {
			tiny.err = err
			return
		}
		tok, err := tokenizers.Load(dir)
		tiny.e, tiny.err = &models.Embedder{Model: m, Tokenizer: tok, Pooling: models.Mean}, err
	})
	if tiny.err != nil {
		t.Fatal(tiny.err)
	}
	return tiny.e
}

// testConfig is DefaultConfig for the tiny model, with short timeouts.
func testConfig() Config {
	c := DefaultConfig()
	c.ModelName, c.Aliases = "tiny", []string{"tiny-bert"}
	c.DrainTimeout = 5 * time.Second
	return c
}

// running is a Server serving on a local port.
type running struct {
	s    *Server
	url  string
	stop func() error // ends Serve's context and returns what Serve returned
}

// start serves e with cfg on a free local port and waits until it is ready; before runs on the Server
// before it serves (to wrap its forward pass). The server is stopped at the test's end.
func start(t *testing.T, cfg Config, e *models.Embedder, before func(*Server)) *running {
	t.Helper()
	s, err := New(cfg, e, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	select {
	case <-s.Ready():
	case err := <-served:
		t.Fatalf("Serve returned before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not ready after 30 s")
	}
	var once sync.Once
	var serveErr error
	r := &running{s: s, url: "http://" + ln.Addr().String(), stop: func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-served:
			case <-time.After(20 * time.Second):
				serveErr = errors.New("Serve did not return within 20 s of its context's end")
			}
		})
		return serveErr
	}}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return r
}

// gate holds forward passes (after the warm-up) until opened: a way to keep requests in flight.
type gate struct {
	entered chan struct{} // one send per held forward pass
	open    chan struct{}
	mu      sync.Mutex
	seen    [][]models.Encoded
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), open: make(chan struct{})} }

// wrap makes s's forward pass wait on g once s is ready.
func (g *gate) wrap(s *Server) {
	embed := s.batcher.embed
	s.batcher.embed = func(rows []models.Encoded) ([][]float32, error) {
		if s.isReady.Load() {
			g.mu.Lock()
			g.seen = append(g.seen, rows)
			g.mu.Unlock()
			g.entered <- struct{}{}
			<-g.open
		}
		return embed(rows)
	}
}

// reference is the vector convrep embed writes for text: Embed of that text alone.
func reference(t *testing.T, e *models.Embedder, text string) []float32 {
	t.Helper()
	v, err := e.Embed([]string{text})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

// near fails when got and want differ by more than tol in any value.
func near(got, want []float32, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > tol || math.IsNaN(d) {
			return fmt.Errorf("value %d: %g, want %g (off by %.2g > %g)", i, got[i], want[i], d, tol)
		}
	}
	return nil
}

// unit is a copy of v scaled to length 1.
func unit(v []float32) []float32 {
	u := append([]float32(nil), v...)
	models.Unit(u)
	return u
}

// poll waits until cond holds, up to 10 s.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
