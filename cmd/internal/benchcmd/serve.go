package benchcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"convrep/internal/cli"
	"convrep/internal/shared"
	"convrep/internal/torch"
	"convrep/modelref"
	"convrep/models"
	"convrep/serve"
)

// ServeCommand is bench serve: closed-loop HTTP clients against convrep serve, beside offline embedding of the
// same texts with the same model.
var ServeCommand = cli.Command[serveOptions]{Name: "bench serve", Parse: parseServeFlags, Run: runServe, Interruptible: true}

type serveOptions struct {
	model, url, apiKey, device, precision, data, output, writeIDs string
	concurrency, inputs                                           []int
	lengths                                                       []string
	warmup, duration                                              time.Duration
	threads, maxLength, texts, batchSize                          int
	offline                                                       bool
}

func parseServeFlags(args []string, errOut io.Writer) (serveOptions, error) {
	o := serveOptions{concurrency: []int{1, 8, 64}, inputs: []int{1, 32}, lengths: []string{"short", "long"}}
	fs := cli.NewFlags("bench serve", "bench serve --model REF | --url URL [flags]", serveAbout, errOut)
	fs.StringVar(&o.model, "model", "", "the model to serve, as convrep serve takes it (a run or model folder, a hub name, an experiment .toml); "+
		"bench serve starts the server itself, in this process, on a free local port (required unless --url)")
	fs.StringVar(&o.url, "url", "", "the base URL of a running server (http://host:port) to load instead of starting one")
	fs.StringVar(&o.apiKey, "api-key", os.Getenv("CONVREP_API_KEY"), "the Bearer token of --url's server (default $CONVREP_API_KEY)")
	fs.StringVar(&o.device, "device", "cpu", "cpu, cuda or cuda:N, for --model")
	fs.StringVar(&o.precision, "precision", "fp32", "fp32 or bf16, for --model")
	fs.IntVar(&o.threads, "threads", 0, "libtorch intra-op threads; 0 = libtorch's default")
	fs.IntVar(&o.maxLength, "max-length", 0, "longest input in tokens; 0 = what the model folder declares, as embed and serve take it")
	fs.StringVar(&o.data, "data", "", "the pretraining data root holding woz2/ (default: ../shared/data/pretrain, or under $CONVREP_SHARED)")
	fs.IntVar(&o.texts, "texts", 2048, "distinct texts of each length, drawn in turn")
	fs.Func("concurrency", "closed-loop clients per cell, a comma-separated list (default 1,8,64)", intList(&o.concurrency))
	fs.Func("inputs", "inputs per request, a comma-separated list (default 1,32)", intList(&o.inputs))
	fs.Func("lengths", "input lengths, a comma-separated list of short (WOZ 2.0 utterances, about 12 tokens) and long "+
		"(consecutive utterances joined to about 128 tokens) (default short,long)", func(v string) error {
		o.lengths = strings.Split(v, ",")
		for _, l := range o.lengths {
			if l != "short" && l != "long" {
				return fmt.Errorf("%q is not short or long", l)
			}
		}
		return nil
	})
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "untimed load before each cell's window")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "each cell's timed window")
	fs.BoolVar(&o.offline, "offline", true, "with --model, also time offline embedding (convrep embed's path) of the same texts and one forward pass of one short text")
	fs.IntVar(&o.batchSize, "batch-size", 64, "the offline row's batch size (convrep embed's default)")
	fs.StringVar(&o.output, "output", "", "also append the JSON lines to this file")
	fs.StringVar(&o.writeIDs, "write-ids", "", "write the texts' token ids into this folder, short.jsonl and long.jsonl, one JSON "+
		"array a line, for scripts/bench_pytorch.py --infer --ids (needs --model)")
	if err := cli.NoArgs(fs, args); err != nil {
		return o, err
	}
	switch {
	case (o.model == "") == (o.url == ""):
		fmt.Fprintln(fs.Output(), "bench serve: give one of --model and --url (see --help)")
		return o, errors.New("one of --model and --url")
	case o.writeIDs != "" && o.model == "":
		fmt.Fprintln(fs.Output(), "bench serve: --write-ids needs --model (the tokenizer)")
		return o, errors.New("--write-ids needs --model")
	case o.texts < 1 || o.batchSize < 1 || o.duration <= 0 || o.warmup < 0:
		fmt.Fprintln(fs.Output(), "bench serve: --texts, --batch-size and --duration must be positive, --warmup not negative")
		return o, errors.New("bad numbers")
	}
	return o, nil
}

// intList parses a comma-separated list of positive integers into dst.
func intList(dst *[]int) func(string) error {
	return func(v string) error {
		var out []int
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("%q is not a positive integer", f)
			}
			out = append(out, n)
		}
		*dst = out
		return nil
	}
}

func runServe(ctx context.Context, o serveOptions, log *zap.Logger) error {
	texts, err := benchTexts(o.data, o.texts)
	if err != nil {
		return err
	}
	out := []io.Writer{os.Stdout}
	if o.output != "" {
		f, err := os.OpenFile(o.output, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		defer f.Close()
		out = append(out, f)
	}
	emit := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = io.MultiWriter(out...).Write(append(b, '\n'))
		return err
	}
	base, model := strings.TrimRight(o.url, "/"), ""
	if o.model != "" {
		// The model's loading, the offline rows and the server's forward passes run on one thread, as in
		// convrep serve (torch.Thread: one OpenMP team).
		th := torch.NewThread()
		var (
			e   *models.Embedder
			cfg serve.Config
			err error
		)
		th.Do(func() { e, cfg, err = loadServed(ctx, o, log) })
		if err != nil {
			return err
		}
		cfg.Thread = th
		if o.writeIDs != "" {
			if err := writeIDs(o.writeIDs, e, texts); err != nil {
				return err
			}
		}
		if o.offline {
			for _, length := range o.lengths {
				var r offlineResult
				th.Do(func() { r, err = offline(ctx, e, texts[length], o.batchSize, length) })
				if err != nil {
					return err
				}
				if err := emit(r); err != nil {
					return err
				}
			}
		}
		srv, err := serve.New(cfg, e, log)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		sctx, stop := context.WithCancel(ctx)
		served := make(chan error, 1)
		go func() { served <- srv.Serve(sctx, ln) }()
		defer func() { stop(); <-served }()
		select {
		case <-srv.Ready():
		case err := <-served:
			return fmt.Errorf("the server stopped before it was ready: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		}
		base, model = "http://"+ln.Addr().String(), cfg.ModelName
	}
	l := &loader{url: base + "/v1/embeddings", model: model, apiKey: o.apiKey,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: slices.Max(o.concurrency)}}}
	for _, length := range o.lengths {
		for _, inputs := range o.inputs {
			for _, c := range o.concurrency {
				if err := ctx.Err(); err != nil {
					return err
				}
				r := l.run(ctx, cell{Concurrency: c, Inputs: inputs, Length: length}, texts[length], o.warmup, o.duration)
				if err := emit(r); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// loadServed loads --model as convrep serve does, and the server's configuration for the load: the defaults,
// with room for the largest cell's inputs.
func loadServed(ctx context.Context, o serveOptions, log *zap.Logger) (*models.Embedder, serve.Config, error) {
	dev, err := torch.ParseDevice(o.device)
	if err != nil {
		return nil, serve.Config{}, err
	}
	precision, err := models.ParsePrecision(o.precision, dev)
	if err != nil {
		return nil, serve.Config{}, err
	}
	if o.threads > 0 {
		if err := torch.SetNumThreads(o.threads); err != nil {
			return nil, serve.Config{}, err
		}
	}
	if err := modelref.Check(o.model, ""); err != nil {
		return nil, serve.Config{}, err
	}
	m, tok, _, dir, err := modelref.Load(ctx, o.model, "", dev, log)
	if err != nil {
		return nil, serve.Config{}, err
	}
	layout, _, err := modelref.Embedding(dir, "")
	if err != nil {
		return nil, serve.Config{}, err
	}
	maxLength, _ := modelref.InputLength(o.maxLength, layout.MaxSeqLength, int(m.Config.MaxSequence()))
	e := &models.Embedder{Model: m, Tokenizer: tok, Pooling: layout.Pooling, MaxLength: maxLength, Precision: precision}
	cfg := serve.DefaultConfig()
	cfg.ModelName, cfg.Normalize = "bench", layout.Normalize
	cfg.MaxClientBatchSize = max(cfg.MaxClientBatchSize, slices.Max(o.inputs))
	cfg.MaxConcurrentInputs = max(cfg.MaxConcurrentInputs, slices.Max(o.inputs)*slices.Max(o.concurrency))
	// A request waits behind every input queued before it: at 64 clients of 32 long inputs on a 12 × 768 BERT
	// on two cores, over five minutes, the default write timeout, which cut every one of them. Here a request
	// may take as long as its cell.
	cfg.WriteTimeout = max(cfg.WriteTimeout, o.warmup+o.duration)
	return e, cfg, nil
}

// offlineResult is the offline row: EmbedAll over the texts, and the median time of one forward pass of one
// short text (the floor of a lone request's latency).
type offlineResult struct {
	Kind         string  `json:"kind"` // "offline"
	Length       string  `json:"length"`
	Texts        int     `json:"texts"`
	BatchSize    int     `json:"batch_size"`
	Seconds      float64 `json:"seconds"`
	InputsPerS   float64 `json:"inputs_per_s"`
	TokensPerS   float64 `json:"tokens_per_s"`
	ForwardOneMs float64 `json:"forward_one_ms"`
}

func offline(ctx context.Context, e *models.Embedder, texts []string, batchSize int, length string) (offlineResult, error) {
	tokens := 0
	for _, t := range texts {
		r, err := e.Encode(t)
		if err != nil {
			return offlineResult{}, err
		}
		tokens += len(r.IDs)
	}
	if _, err := e.EmbedAll(ctx, texts[:min(len(texts), batchSize)], batchSize, nil); err != nil { // warm-up
		return offlineResult{}, err
	}
	start := time.Now()
	if _, err := e.EmbedAll(ctx, texts, batchSize, nil); err != nil {
		return offlineResult{}, err
	}
	secs := time.Since(start).Seconds()
	var one []float64
	for i := 0; i < 21; i++ {
		t0 := time.Now()
		if _, err := e.Embed(texts[i%len(texts) : i%len(texts)+1]); err != nil {
			return offlineResult{}, err
		}
		one = append(one, float64(time.Since(t0))/float64(time.Millisecond))
	}
	return offlineResult{Kind: "offline", Length: length, Texts: len(texts), BatchSize: batchSize, Seconds: secs,
		InputsPerS: float64(len(texts)) / secs, TokensPerS: float64(tokens) / secs, ForwardOneMs: *percentile(one, 50)}, nil
}

// writeIDs writes the texts' token ids, as the model reads them, into dir/short.jsonl and dir/long.jsonl: one
// JSON array a line, as scripts/bench_pytorch.py --infer --ids reads them.
func writeIDs(dir string, e *models.Embedder, texts map[string][]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--write-ids: %w", err)
	}
	for length, ts := range texts {
		var b strings.Builder
		for _, t := range ts {
			r, err := e.Encode(t)
			if err != nil {
				return err
			}
			line, err := json.Marshal(r.IDs)
			if err != nil {
				return err
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, length+".jsonl"), []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("--write-ids: %w", err)
		}
	}
	return nil
}

// benchTexts reads n short texts (WOZ 2.0 utterances, user and system, in file order) and n long ones: the
// i-th joins utterances i, i+1, ... of that flattened list until they reach longWords words (about 128 tokens).
func benchTexts(root string, n int) (map[string][]string, error) {
	if root == "" {
		var err error
		if root, err = shared.Path("data", "pretrain"); err != nil {
			return nil, fmt.Errorf("bench texts: %w; pass --data, the folder holding woz2/", err)
		}
	}
	const longWords = 96
	var short []string
	for _, split := range []string{"train", "validate", "test"} {
		path := filepath.Join(root, "woz2", "data", "woz", "woz_"+split+"_en.json")
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("bench texts: %w", err)
		}
		var dialogues []struct {
			Dialogue []struct {
				Transcript       string `json:"transcript"`
				SystemTranscript string `json:"system_transcript"`
			} `json:"dialogue"`
		}
		if err := json.Unmarshal(data, &dialogues); err != nil {
			return nil, fmt.Errorf("bench texts: %s: %w", path, err)
		}
		for _, d := range dialogues {
			for _, turn := range d.Dialogue {
				for _, u := range []string{turn.SystemTranscript, turn.Transcript} {
					if u = strings.TrimSpace(u); u != "" {
						short = append(short, u)
					}
				}
			}
		}
	}
	if len(short) < n {
		return nil, fmt.Errorf("bench texts: WOZ 2.0 under %s holds %d utterances, fewer than --texts %d", root, len(short), n)
	}
	long := make([]string, n)
	for i := range long {
		var words []string
		for j := i; len(words) < longWords; j++ {
			words = append(words, strings.Fields(short[j%len(short)])...)
		}
		long[i] = strings.Join(words, " ")
	}
	return map[string][]string{"short": short[:n], "long": long}, nil
}

// serveAbout is what bench serve --help says below its usage line.
const serveAbout = "Loads a convrep serve with closed-loop clients on POST /v1/embeddings, one cell per concurrency, inputs per\n" +
	"request and input length, and prints one JSON line per cell:\n" +
	"{\"kind\":\"serve\",\"concurrency\":...,\"inputs_per_request\":...,\"length\":...,\"requests\":...,\"requests_per_s\":...,\n" +
	" \"inputs_per_s\":...,\"tokens_per_s\":...,\"p50_ms\":...,\"p90_ms\":...,\"p99_ms\":...,\"errors\":...}\n" +
	"With --model it first times offline embedding of the same texts (EmbedAll, convrep embed's path):\n" +
	"{\"kind\":\"offline\",\"length\":...,\"inputs_per_s\":...,\"tokens_per_s\":...,\"forward_one_ms\":...}\n" +
	"tokens count what the model reads, special tokens included (the server's usage.prompt_tokens).\n"
