package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"convrep/models"
)

// Server answers the embedding APIs with one Embedder. New makes it; Serve runs it on a listener until its
// context ends.
type Server struct {
	cfg        Config
	e          *models.Embedder
	log        *zap.Logger
	m          *metrics
	batcher    *batcher
	tokenizers chan struct{} // the tokenise pool's slots
	maxLength  int           // the longest input in tokens, as the embedder cuts
	vocab      int64         // token ids are below it
	dims       int           // the width of the model's vectors
	names      map[string]bool
	mux        *http.ServeMux

	ready     chan struct{} // closed once the warm-up forward pass has run
	readyOnce sync.Once
	isReady   atomic.Bool
	draining  atomic.Bool
	served    atomic.Bool
}

// New makes a server for e with cfg, after checking cfg's limits against e's maximum input length.
func New(cfg Config, e *models.Embedder, log *zap.Logger) (*Server, error) {
	if e == nil || e.Model == nil || e.Tokenizer == nil {
		return nil, errors.New("serve: the embedder has no model or tokenizer")
	}
	maxLength := int(e.Model.Config.MaxSequence())
	if e.MaxLength > 0 && e.MaxLength < maxLength {
		maxLength = e.MaxLength // as Embedder.Encode cuts
	}
	if err := cfg.check(maxLength); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, e: e, log: log, m: newMetrics(), tokenizers: make(chan struct{}, cfg.TokenizeWorkers),
		maxLength: maxLength, vocab: e.Model.Config.VocabSize, dims: int(e.Model.Config.HiddenSize),
		names: map[string]bool{cfg.ModelName: true}, mux: http.NewServeMux(), ready: make(chan struct{})}
	for _, n := range cfg.Aliases {
		s.names[n] = true
	}
	s.batcher = newBatcher(onThread(cfg.Thread, e.EmbedEncoded), cfg.MaxBatchTokens, cfg.MaxBatchSize, cfg.MaxConcurrentInputs, s.m)
	s.routes()
	return s, nil
}

// Dimensions is the width of the served vectors; MaxLength the longest input in tokens.
func (s *Server) Dimensions() int { return s.dims }

// MaxLength is the longest input in tokens, special tokens included; longer ones are cut or refused.
func (s *Server) MaxLength() int { return s.maxLength }

// Ready is closed once the warm-up forward pass has run and the routes answer.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Handler is the server's routes, for an http.Server of the caller's own; Serve starts the batcher they
// need.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve answers on ln until ctx ends, then drains: it stops accepting (health answers 503), waits up to
// Config.DrainTimeout for the requests in flight, closes what remains, and returns nil. It runs one warm-up
// forward pass first; until it has run every route but /health and /metrics answers 503. It returns an
// error when the warm-up fails or ln does. A Server serves once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("serve: a Server serves once")
	}
	hs := &http.Server{Handler: s.mux, ReadHeaderTimeout: s.cfg.ReadHeaderTimeout, ReadTimeout: s.cfg.ReadTimeout,
		WriteTimeout: s.cfg.WriteTimeout, IdleTimeout: s.cfg.IdleTimeout, ErrorLog: zap.NewStdLog(s.log.Named("http"))}
	s.batcher.start()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	warmed := make(chan error, 1)
	go func() { warmed <- s.warmUp(ctx) }()
	for ctx.Err() == nil {
		select {
		case err := <-served:
			s.batcher.close()
			return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
		case err := <-warmed:
			if err != nil && ctx.Err() == nil {
				hs.Close()
				s.batcher.close()
				return fmt.Errorf("the warm-up forward pass: %w", err)
			}
			warmed = nil
			if err == nil {
				s.isReady.Store(true)
				s.readyOnce.Do(func() { close(s.ready) })
				s.log.Info("ready: the warm-up forward pass ran", zap.String("addr", ln.Addr().String()))
			}
		case <-ctx.Done():
		}
	}
	return s.drain(hs)
}

// warmUp runs one input through the batcher and the model.
func (s *Server) warmUp(ctx context.Context) error {
	r, err := s.e.Encode("warm up")
	if err != nil {
		return err
	}
	if !s.batcher.admit(1) {
		return errors.New("no room for one input (--max-concurrent-inputs)")
	}
	_, err = s.batcher.submit(ctx, []models.Encoded{r}).wait()
	return err
}

// drain stops the server as Serve says.
func (s *Server) drain(hs *http.Server) error {
	s.draining.Store(true)
	s.log.Info("draining: finishing the requests in flight", zap.Duration("drain_timeout", s.cfg.DrainTimeout),
		zap.Int64("inputs_in_flight", s.batcher.inFlight.Load()))
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		s.log.Warn("drain: the drain timeout passed; closing the connections still open",
			zap.Int64("inputs_in_flight", s.batcher.inFlight.Load()), zap.Error(err))
		hs.Close()
	}
	s.batcher.close()
	s.log.Info("stopped")
	return nil
}

// handlerFunc is a route's own work: it writes its answer, or returns the error that the route answers.
type handlerFunc func(w http.ResponseWriter, r *http.Request) *apiError

// routes registers every route. public routes need no API key; open routes answer before the warm-up too.
func (s *Server) routes() {
	for _, r := range []struct {
		method, path string
		public, open bool
		h            handlerFunc
	}{
		{"POST", "/v1/embeddings", false, false, s.openAIEmbeddings},
		{"POST", "/embeddings", false, false, s.openAIEmbeddings},
		{"POST", "/embed", false, false, s.teiEmbed},
		{"POST", "/{$}", false, false, s.teiEmbed}, // TEI answers an embedding model's POST / as /embed (huggingface_hub's client posts there)
		{"POST", "/tokenize", false, false, s.teiTokenize},
		{"GET", "/info", false, false, s.teiInfo},
		{"GET", "/health", true, true, s.health},
		{"POST", "/api/embed", false, false, s.ollamaEmbed},
		{"GET", "/metrics", true, true, s.metrics},
	} {
		s.route(r.method, r.path, r.public, r.open, r.h)
	}
	s.route("", "/", true, true, func(_ http.ResponseWriter, r *http.Request) *apiError {
		return fail(http.StatusNotFound, KindNotFound, "", "", "no route %s %s: see /info, /v1/embeddings, /embed, /api/embed", r.Method, r.URL.Path)
	})
}

// route registers h at path behind what every route shares: metrics, panic recovery, CORS, the method, the
// API key and readiness. Its errors are answered in the path's shape.
func (s *Server) route(method, path string, public, open bool, h handlerFunc) {
	label := strings.TrimSuffix(path, "{$}")
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if method == "" { // the catch-all: one label, whatever the path
			label = "other"
		}
		s.m.requests.WithLabelValues(label).Inc()
		aerr := s.guard(method, public, open, w, r)
		if aerr == nil && r.Method != http.MethodOptions {
			aerr = s.call(h, w, r)
		}
		if aerr != nil {
			s.m.failures.WithLabelValues(label, string(aerr.kind)).Inc()
			if aerr.status >= 500 {
				s.log.Error("request failed", zap.String("route", label), zap.Int("status", aerr.status), zap.String("error", aerr.msg))
			} else {
				s.log.Debug("request refused", zap.String("route", label), zap.Int("status", aerr.status), zap.String("error", aerr.msg))
			}
			if aerr.kind != KindGone {
				writeError(w, shapeOf(r.URL.Path), aerr)
			}
		}
		s.m.duration.WithLabelValues(label).Observe(time.Since(start).Seconds())
	})
}

// call runs h, turning a panic into a 500 (logged with its stack): the server keeps serving.
func (s *Server) call(h handlerFunc, w http.ResponseWriter, r *http.Request) (aerr *apiError) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("a handler panicked", zap.String("path", r.URL.Path), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			aerr = fail(http.StatusInternalServerError, KindInternal, "internal_error", "", "internal error: the server recovered from a panic (logged)")
		}
	}()
	return h(w, r)
}

// guard answers CORS preflights and checks the method, the API key and readiness.
func (s *Server) guard(method string, public, open bool, w http.ResponseWriter, r *http.Request) *apiError {
	if s.cors(w, r) && r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if method != "" && r.Method != method {
		w.Header().Set("Allow", method)
		return fail(http.StatusMethodNotAllowed, KindNotFound, "method_not_allowed", "", "%s takes %s, not %s", r.URL.Path, method, r.Method)
	}
	if !public && s.cfg.APIKey != "" {
		key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(s.cfg.APIKey)) != 1 {
			return fail(http.StatusUnauthorized, KindAuth, "invalid_api_key", "", "missing or wrong API key: send the header Authorization: Bearer <key>")
		}
	}
	if !open {
		return s.unavailable(w)
	}
	return nil
}

// unavailable is the 503 of a server warming up or draining, nil otherwise.
func (s *Server) unavailable(w http.ResponseWriter) *apiError {
	switch {
	case s.draining.Load():
		w.Header().Set("Connection", "close")
		return fail(http.StatusServiceUnavailable, KindUnavailable, "unavailable", "", "the server is shutting down")
	case !s.isReady.Load():
		return fail(http.StatusServiceUnavailable, KindUnavailable, "unavailable", "", "the server is warming up: its first forward pass has not run yet")
	}
	return nil
}

// cors sets the CORS headers for an allowed origin and says whether it did.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if s.cfg.CORSAllowOrigin == "" || origin == "" {
		return false
	}
	allow := ""
	for _, o := range strings.Split(s.cfg.CORSAllowOrigin, ",") {
		switch o = strings.TrimSpace(o); o {
		case "*":
			allow = "*"
		case origin:
			allow = origin
		}
		if allow != "" {
			break
		}
	}
	if allow == "" {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", allow)
	h.Add("Vary", "Origin")
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		h.Set("Access-Control-Max-Age", "600")
	} else {
		h.Set("Access-Control-Expose-Headers", "x-compute-tokens, x-compute-characters, x-total-time, x-tokenization-time, x-queue-time, x-inference-time")
	}
	return true
}

// readBody reads a request's body, at most Config.PayloadLimit bytes (413 beyond).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	tooLarge := fail(http.StatusRequestEntityTooLarge, KindTooLarge, "payload_too_large", "",
		"the body is over the limit of %d bytes (--payload-limit)", s.cfg.PayloadLimit)
	if r.ContentLength > s.cfg.PayloadLimit {
		return nil, tooLarge
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.PayloadLimit))
	var max *http.MaxBytesError
	switch {
	case errors.As(err, &max):
		return nil, tooLarge
	case err != nil && r.Context().Err() != nil:
		return nil, fail(499, KindGone, "", "", "the client went away")
	case err != nil:
		return nil, fail(http.StatusBadRequest, KindValidation, "invalid_body", "", "reading the body: %v", err)
	}
	return b, nil
}

// setTimes writes TEI's timing headers: the request's stages in milliseconds, its tokens and characters.
func setTimes(w http.ResponseWriter, res *result, start time.Time) {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64) }
	h := w.Header()
	h.Set("x-compute-tokens", strconv.Itoa(res.tokens))
	h.Set("x-compute-characters", strconv.Itoa(res.chars))
	h.Set("x-total-time", ms(time.Since(start)))
	h.Set("x-tokenization-time", ms(res.tokenize))
	h.Set("x-queue-time", ms(res.queue))
	h.Set("x-inference-time", ms(res.inference))
}

// health is 200 once the warm-up has run, 503 while warming up or draining.
func (s *Server) health(w http.ResponseWriter, _ *http.Request) *apiError {
	if aerr := s.unavailable(w); aerr != nil {
		return aerr
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// metrics serves the Prometheus metrics.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) *apiError {
	s.m.handler().ServeHTTP(w, r)
	return nil
}
