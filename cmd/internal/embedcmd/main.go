// Package embedcmd is the embed command (cmd/embed, convrep embed): it writes one embedding per input text
// with a convrep or HuggingFace model; --model names it as for evaluate (package modelref).
//
//	go run ./cmd/embed --model RUN_OR_DIR_OR_NAME [--pooling mean|cls] --max-length N --input texts.txt|texts.jsonl --output out.jsonl
//
// A .txt input holds one text per line; a .jsonl input one JSON object per line, whose "text" field is
// embedded. The output holds one JSON object per input, in input order: {"text": ..., "embedding": [...]}.
package embedcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"

	"go.uber.org/zap"

	"convrep/internal/cli"
	"convrep/internal/torch"
	"convrep/modelref"
	"convrep/models"
	"convrep/models/sbert"
	"convrep/tokenizers"
)

type options struct {
	model, pooling, input, output, device, truncation string
	maxLength, batchSize, threads                     int
}

// parse reads the command line args (after the command's name); usage and flag errors are printed to out.
// It returns flag.ErrHelp for -h / --help.
func parse(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.model, "model", "", "model to embed with, as evaluate takes it: a convrep run folder (its model/), a model folder, a hub name (bert-base-uncased, org/name) found in the HuggingFace cache or downloaded into it, or an experiment .toml (its untrained backbone) (required)")
	fs.StringVar(&o.pooling, "pooling", "", "how token states become one vector: mean (over real tokens) or cls (default: what the model folder declares for sentence-transformers, else mean)")
	fs.IntVar(&o.maxLength, "max-length", 0, "longest input in tokens, special tokens included; 0 = the max_seq_length the folder declares for sentence-transformers, else the model's limit")
	fs.StringVar(&o.truncation, "truncation", "right", "which end of a too-long text is cut: right, or left (keeps a dialogue's latest turns)")
	fs.StringVar(&o.input, "input", "", "texts to embed: .txt (one per line) or .jsonl (a \"text\" field per line) (required)")
	fs.StringVar(&o.output, "output", "", "where to write the embeddings as JSON lines (required); written atomically")
	fs.IntVar(&o.batchSize, "batch-size", 64, "texts per forward pass")
	fs.StringVar(&o.device, "device", "cpu", "cpu, cuda or cuda:N")
	fs.IntVar(&o.threads, "threads", 0, "libtorch intra-op threads; 0 = libtorch's default")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: embed --model DIR_OR_NAME --input FILE --output FILE [flags]\n\n"+
			"Writes one JSON object per input text, {\"text\": ..., \"embedding\": [...]}, in input order.\n\nflags:\n")
		fs.PrintDefaults()
	}
	args, err := cli.Parse(fs, args)
	if err != nil {
		return o, err
	}
	if len(args) > 0 {
		fmt.Fprintf(out, "embed: unexpected arguments %q (see --help)\n", args)
		return o, fmt.Errorf("unexpected arguments %q", args)
	}
	return o, nil
}

var command = cli.Command[options]{Name: "embed", Parse: parse, Run: run, Interruptible: true}

// Check parses args as Main does and returns what it would reject, without loading a model.
func Check(args []string) error { return command.Check(args) }

// Main runs embed on args, the command line after the command's name, and returns the exit status: 0, 1 for a
// failure, 2 for a command line that does not parse. SIGINT or SIGTERM stop it (run watches ctx).
func Main(args []string) int { return command.Main(args) }

func run(ctx context.Context, o options, log *zap.Logger) error {
	for flagName, v := range map[string]string{"--model": o.model, "--input": o.input, "--output": o.output} {
		if v == "" {
			return fmt.Errorf("%s is required (see --help)", flagName)
		}
	}
	if o.pooling != "" {
		if _, err := models.ParsePooling(o.pooling); err != nil {
			return err
		}
	}
	trunc, err := parseTruncation(o.truncation)
	if err != nil {
		return err
	}
	if o.batchSize < 1 {
		return fmt.Errorf("--batch-size must be at least 1, got %d", o.batchSize)
	}
	dev, err := torch.ParseDevice(o.device)
	if err != nil {
		return err
	}
	if o.threads > 0 {
		if err := torch.SetNumThreads(o.threads); err != nil {
			return err
		}
	}
	texts, err := readTexts(o.input)
	if err != nil {
		return err
	}
	runtime.LockOSThread() // libtorch's grad mode is per thread
	if err := modelref.Check(o.model, ""); err != nil {
		return err
	}
	m, tok, _, dir, err := modelref.Load(ctx, o.model, "", dev, log)
	if err != nil {
		return err
	}
	l, from, err := embedding(dir, o.pooling)
	if err != nil {
		return err
	}
	maxLength, lengthFrom := inputLength(o.maxLength, l.MaxSeqLength, int(m.Config.MaxSequence()))
	e := &models.Embedder{Model: m, Tokenizer: tok, Pooling: l.Pooling, MaxLength: maxLength, Truncation: trunc}
	log.Info("embedding", zap.Int("texts", len(texts)), zap.String("model", dir), zap.String("pooling", string(l.Pooling)),
		zap.Bool("normalize", l.Normalize), zap.String("as", from), zap.Int("max_length", maxLength), zap.String("length_from", lengthFrom))
	return writeEmbeddings(ctx, o.output, texts, e, o.batchSize, l.Normalize)
}

// embedding is how the model at dir embeds: the --pooling flag when given, else what the folder declares
// for sentence-transformers (its Pooling and Normalize modules), else mean pooling; from says which. The
// layout's MaxSeqLength is the folder's declared input length (0: none).
func embedding(dir, flagPooling string) (l sbert.Layout, from string, err error) {
	l, err = sbert.Read(dir)
	switch {
	case errors.Is(err, sbert.ErrNone):
		l, from = sbert.Layout{Pooling: models.Mean}, "the default (the folder declares no pooling)"
	case err != nil:
		return sbert.Layout{}, "", err
	default:
		from = "the folder's sentence-transformers modules"
	}
	if flagPooling != "" {
		l.Pooling, from = models.Pooling(flagPooling), "--pooling"
	}
	return l, from, nil
}

// inputLength is the longest input in tokens and where it came from: --max-length when given, else the
// max_seq_length the folder declares for sentence-transformers (which truncates there, so that both give
// the same vectors), else the model's position limit. None is longer than the limit.
func inputLength(flagLength, declared, limit int) (int, string) {
	switch {
	case flagLength > 0:
		return min(flagLength, limit), "--max-length"
	case declared > 0:
		return min(declared, limit), "the folder's max_seq_length (sentence_bert_config.json)"
	default:
		return limit, "the model's position limit"
	}
}

func parseTruncation(s string) (tokenizers.Truncation, error) {
	switch strings.ToLower(s) {
	case "right":
		return tokenizers.TruncateRight, nil
	case "left":
		return tokenizers.TruncateLeft, nil
	}
	return 0, fmt.Errorf("--truncation %q is not right or left", s)
}
