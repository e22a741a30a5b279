package serve

import (
	"fmt"
	"runtime"
	"time"

	"convrep/internal/torch"
)

// Config is how a Server answers and what it bounds. DefaultConfig holds the defaults convrep serve's
// flags start from.
type Config struct {
	// ModelName is the name responses report; requests may name it, or one of Aliases (the folder's name).
	ModelName string
	Aliases   []string
	// Normalize: the model's folder declares a Normalize module, so OpenAI's route returns unit vectors (as
	// convrep embed writes them) and re-normalises after cutting to "dimensions".
	Normalize bool

	// MaxBatchTokens bounds one forward pass: rows × the longest row (the encoder pads to it). It must hold
	// one input of the longest length.
	MaxBatchTokens int
	// MaxBatchSize bounds the rows of one forward pass.
	MaxBatchSize int
	// MaxClientBatchSize bounds the inputs of one request (413 beyond).
	MaxClientBatchSize int
	// MaxConcurrentInputs bounds the inputs admitted and not yet answered, over all requests: a request that
	// would pass it is answered 429 at once, with Retry-After. It bounds the queue.
	MaxConcurrentInputs int
	// PayloadLimit bounds a request body in bytes (413 beyond).
	PayloadLimit int64
	// TokenizeWorkers is how many requests tokenise at once, off the inference thread.
	TokenizeWorkers int

	// APIKey, when set, is the Bearer token every route but /health and /metrics requires (401 otherwise).
	APIKey string
	// CORSAllowOrigin, when set, is the origins browsers may call from: "*", or a comma-separated list.
	CORSAllowOrigin string

	// The HTTP server's timeouts: a client that sends its request slowly (slowloris) or idles holds a
	// connection no longer than these.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// DrainTimeout bounds how long Serve, once its context ends, waits for the requests in flight.
	DrainTimeout time.Duration

	// Thread, when set, runs every forward pass: the thread the model was loaded on, so that libtorch's
	// OpenMP keeps one team (torch.Thread says why that halves a short forward pass on few cores). Nil runs
	// them on the inference goroutine's own OS thread.
	Thread *torch.Thread
}

// DefaultConfig is Config with the defaults of convrep serve's flags; ModelName is left to the caller.
func DefaultConfig() Config {
	return Config{
		MaxBatchTokens:      16384,
		MaxBatchSize:        64,
		MaxClientBatchSize:  2048, // OpenAI's own limit on inputs per request
		MaxConcurrentInputs: 4096,
		PayloadLimit:        8 << 20,
		TokenizeWorkers:     max(1, runtime.GOMAXPROCS(0)),
		ReadHeaderTimeout:   10 * time.Second,
		ReadTimeout:         60 * time.Second,
		WriteTimeout:        5 * time.Minute,
		IdleTimeout:         2 * time.Minute,
		DrainTimeout:        30 * time.Second,
	}
}

// check says what is wrong with c for a model whose inputs are at most maxLength tokens, naming the flag.
func (c Config) check(maxLength int) error {
	for _, v := range []struct {
		flag string
		n    int64
	}{
		{"--max-batch-tokens", int64(c.MaxBatchTokens)}, {"--max-batch-size", int64(c.MaxBatchSize)},
		{"--max-client-batch-size", int64(c.MaxClientBatchSize)}, {"--max-concurrent-inputs", int64(c.MaxConcurrentInputs)},
		{"--payload-limit", c.PayloadLimit}, {"--tokenize-workers", int64(c.TokenizeWorkers)},
	} {
		if v.n < 1 {
			return fmt.Errorf("%s %d: must be at least 1", v.flag, v.n)
		}
	}
	if c.MaxBatchTokens < maxLength {
		return fmt.Errorf("--max-batch-tokens %d is less than the longest input, %d tokens: raise it or lower --max-length", c.MaxBatchTokens, maxLength)
	}
	if c.MaxConcurrentInputs < c.MaxClientBatchSize {
		return fmt.Errorf("--max-concurrent-inputs %d is less than --max-client-batch-size %d: a full request could never be admitted", c.MaxConcurrentInputs, c.MaxClientBatchSize)
	}
	for _, v := range []struct {
		flag string
		d    time.Duration
	}{
		{"--read-header-timeout", c.ReadHeaderTimeout}, {"--read-timeout", c.ReadTimeout}, {"--write-timeout", c.WriteTimeout},
		{"--idle-timeout", c.IdleTimeout}, {"--drain-timeout", c.DrainTimeout},
	} {
		if v.d <= 0 {
			return fmt.Errorf("%s %v: must be positive", v.flag, v.d)
		}
	}
	if c.ModelName == "" {
		return fmt.Errorf("no model name to serve under (--served-model-name)")
	}
	return nil
}
