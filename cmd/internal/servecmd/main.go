// Package servecmd is the serve command (cmd/serve, convrep serve): it puts a convrep or HuggingFace model
// behind the embedding APIs clients speak (OpenAI's /v1/embeddings, TEI's /embed, Ollama's /api/embed; see
// package serve and docs/serving.md). --model names it as for embed and evaluate (package modelref); its
// pooling, normalisation and maximum length come from the folder as embed takes them.
//
//	go run ./cmd/serve --model RUN_OR_DIR_OR_NAME [--addr 127.0.0.1:8080] [--api-key KEY]
//
// SIGINT or SIGTERM drain it (health answers 503, the requests in flight finish within --drain-timeout) and it
// exits 0; a second signal exits at once.
package servecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"go.uber.org/zap"

	"convrep/internal/cli"
	"convrep/internal/torch"
	"convrep/modelref"
	"convrep/models"
	"convrep/serve"
	"convrep/tokenizers"
)

// APIKeyEnv is the environment variable --api-key defaults to.
const APIKeyEnv = "CONVREP_API_KEY"

type options struct {
	modelref.Encoding
	addr, servedName string
	cfg              serve.Config
}

// parse reads the command line args (after the command's name); usage and flag errors are printed to out.
// It returns flag.ErrHelp for -h / --help.
func parse(args []string, out io.Writer) (options, error) {
	o := options{cfg: serve.DefaultConfig()}
	c := &o.cfg
	fs := cli.NewFlags("serve", "serve --model DIR_OR_NAME [flags]", serveAbout, out)
	o.AddFlags(fs, "to serve, as embed takes it")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "host:port to listen on (0.0.0.0:8080 for every interface)")
	fs.StringVar(&o.servedName, "served-model-name", "", "the model name responses report and requests may use (default: the model folder's name); the folder's name is accepted too")
	fs.StringVar(&c.APIKey, "api-key", "", "require this Bearer token on every route but /health and /metrics (default: $"+APIKeyEnv+"; none when both are empty)")
	fs.StringVar(&c.CORSAllowOrigin, "cors-allow-origin", "", "origins browsers may call from: * or a comma-separated list (default: none)")
	fs.IntVar(&c.MaxBatchTokens, "max-batch-tokens", c.MaxBatchTokens, "padded tokens per forward pass (rows × longest row)")
	fs.IntVar(&c.MaxBatchSize, "max-batch-size", c.MaxBatchSize, "inputs per forward pass")
	fs.IntVar(&c.MaxClientBatchSize, "max-client-batch-size", c.MaxClientBatchSize, "inputs per request (413 beyond)")
	fs.IntVar(&c.MaxConcurrentInputs, "max-concurrent-inputs", c.MaxConcurrentInputs, "inputs in flight over all requests (429 at once beyond)")
	fs.Int64Var(&c.PayloadLimit, "payload-limit", c.PayloadLimit, "request body bytes (413 beyond)")
	fs.IntVar(&c.TokenizeWorkers, "tokenize-workers", c.TokenizeWorkers, "requests tokenised at once, off the inference thread")
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", c.ReadHeaderTimeout, "time a client has to send its request's headers")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", c.ReadTimeout, "time a client has to send its whole request")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", c.WriteTimeout, "time from a request's headers to the end of its answer")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "time an idle keep-alive connection is kept")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "on SIGTERM or SIGINT, time the requests in flight have to finish")
	if err := cli.NoArgs(fs, args); err != nil {
		return o, err
	}
	return o, nil
}

var command = cli.Command[options]{Name: "serve", Parse: parse, Run: run}

// Check parses args as Main does and returns what it would reject, without loading a model.
func Check(args []string) error { return command.Check(args) }

// Main runs serve on args, the command line after the command's name, and returns the exit status: 0 (also
// after a drain), 1 for a failure, 2 for a command line that does not parse.
func Main(args []string) int { return command.Main(args) }

func run(ctx context.Context, o options, log *zap.Logger) error {
	ctx, stop := drainOnSignal(ctx, log, os.Exit)
	defer stop()
	if o.Model == "" {
		return fmt.Errorf("--model is required (see --help)")
	}
	trunc, dev, precision, err := o.Parsed()
	if err != nil {
		return err
	}
	if o.cfg.APIKey == "" {
		o.cfg.APIKey = os.Getenv(APIKeyEnv)
	}
	if err := modelref.Check(o.Model, ""); err != nil {
		return err
	}
	ln, err := listen(o.addr) // before the model loads: a port in use fails at once
	if err != nil {
		return err
	}
	defer ln.Close()
	// Every libtorch call, the model's loading and every forward pass, runs on one thread (torch.Thread).
	th := torch.NewThread()
	var (
		m         *models.Model
		tok       *tokenizers.Tokenizer
		name, dir string
	)
	th.Do(func() {
		if o.Threads > 0 {
			if err = torch.SetNumThreads(o.Threads); err != nil {
				return
			}
		}
		m, tok, name, dir, err = modelref.Load(ctx, o.Model, "", dev, log)
	})
	if err != nil {
		return err
	}
	l, from, err := modelref.Embedding(dir, o.Pooling)
	if err != nil {
		return err
	}
	maxLength, lengthFrom := modelref.InputLength(o.MaxLength, l.MaxSeqLength, int(m.Config.MaxSequence()))
	e := &models.Embedder{Model: m, Tokenizer: tok, Pooling: l.Pooling, MaxLength: maxLength, Truncation: trunc, Precision: precision}
	cfg := o.cfg
	cfg.Normalize = l.Normalize
	cfg.Thread = th
	cfg.ModelName, cfg.Aliases = modelNames(o.servedName, o.Model, name, dir)
	s, err := serve.New(cfg, e, log)
	if err != nil {
		return err
	}
	log.Info("serving", zap.String("addr", "http://"+ln.Addr().String()), zap.String("model", cfg.ModelName),
		zap.String("folder", dir), zap.Int("dimensions", s.Dimensions()), zap.String("pooling", string(l.Pooling)),
		zap.String("pooling_from", from), zap.Bool("normalize", l.Normalize), zap.Int("max_length", s.MaxLength()),
		zap.String("length_from", lengthFrom), zap.String("device", o.Device), zap.String("precision", precision.Describe(dev)),
		zap.Int("max_batch_tokens", cfg.MaxBatchTokens), zap.Int("max_batch_size", cfg.MaxBatchSize),
		zap.Int("max_client_batch_size", cfg.MaxClientBatchSize), zap.Int("max_concurrent_inputs", cfg.MaxConcurrentInputs),
		zap.Int64("payload_limit", cfg.PayloadLimit), zap.Bool("api_key", cfg.APIKey != ""), zap.String("cors_allow_origin", cfg.CORSAllowOrigin))
	return s.Serve(ctx, ln)
}

// listen listens on addr; an address in use is an error naming it.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("--addr %s: the address is already in use (another server listens there): stop it or choose another port", addr)
	case err != nil:
		return nil, fmt.Errorf("--addr %s: %w", addr, err)
	}
	return ln, nil
}

// modelNames are the name responses report (--served-model-name, else the model folder's name) and the
// other names requests may use: --model as typed, the name modelref gives, the folder and its base name.
func modelNames(served, ref, name, dir string) (string, []string) {
	folder := name
	if _, err := os.Stat(ref); err == nil {
		folder = filepath.Base(strings.TrimSuffix(ref, "/"))
	}
	if served == "" {
		served = folder
	}
	var aliases []string
	for _, n := range []string{folder, ref, name, dir, filepath.Base(dir)} {
		if n != "" && n != "." && n != served {
			aliases = append(aliases, n)
		}
	}
	return served, aliases
}

// drainOnSignal returns ctx ended by the first SIGINT or SIGTERM (Serve then drains); a second one calls
// exit(1) at once. stop undoes it.
func drainOnSignal(ctx context.Context, log *zap.Logger, exit func(int)) (context.Context, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go watch(sigs, done, cancel, log, exit)
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// watch cancels at the first signal on sigs and exits at the second, until done.
func watch(sigs <-chan os.Signal, done <-chan struct{}, cancel func(), log *zap.Logger, exit func(int)) {
	select {
	case s := <-sigs:
		log.Info("signal: draining; a second signal exits at once", zap.String("signal", s.String()))
		cancel()
	case <-done:
		return
	}
	select {
	case s := <-sigs:
		log.Warn("second signal: exiting at once", zap.String("signal", s.String()))
		log.Sync()
		exit(1)
	case <-done:
	}
}

// serveAbout is what serve --help says below its usage line.
const serveAbout = "Serves embeddings over HTTP: OpenAI's POST /v1/embeddings (and /embeddings), TEI's POST /embed, POST /tokenize,\n" +
	"GET /info and GET /health, Ollama's POST /api/embed, and Prometheus metrics on GET /metrics.\n" +
	"SIGTERM or SIGINT drain the server (a second one exits at once). See docs/serving.md.\n"
