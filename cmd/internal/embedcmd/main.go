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
	"fmt"
	"io"
	"runtime"

	"go.uber.org/zap"

	"convrep/internal/cli"
	"convrep/internal/torch"
	"convrep/modelref"
	"convrep/models"
)

type options struct {
	modelref.Encoding
	input, output string
	batchSize     int
	skipEmpty     bool
}

// parse reads the command line args (after the command's name); usage and flag errors are printed to out.
// It returns flag.ErrHelp for -h / --help.
func parse(args []string, out io.Writer) (options, error) {
	var o options
	fs := cli.NewFlags("embed", "embed --model DIR_OR_NAME --input FILE --output FILE [flags]", embedAbout, out)
	o.AddFlags(fs, "to embed with, as evaluate takes it")
	fs.StringVar(&o.input, "input", "", "texts to embed: .txt (one per line) or .jsonl (a \"text\" field per line) (required)")
	fs.StringVar(&o.output, "output", "", "where to write the embeddings as JSON lines (required); written atomically")
	fs.IntVar(&o.batchSize, "batch-size", 64, "texts per forward pass")
	fs.BoolVar(&o.skipEmpty, "skip-empty", false, "leave out texts that are empty or only white space (by default they are embedded, and counted in a warning)")
	if err := cli.NoArgs(fs, args); err != nil {
		return o, err
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
	for flagName, v := range map[string]string{"--model": o.Model, "--input": o.input, "--output": o.output} {
		if v == "" {
			return fmt.Errorf("%s is required (see --help)", flagName)
		}
	}
	trunc, dev, precision, err := o.Parsed()
	if err != nil {
		return err
	}
	if o.batchSize < 1 {
		return fmt.Errorf("--batch-size must be at least 1, got %d", o.batchSize)
	}
	if o.Threads > 0 {
		if err := torch.SetNumThreads(o.Threads); err != nil {
			return err
		}
	}
	texts, empty, err := readTexts(o.input)
	if err != nil {
		return err
	}
	if len(empty) > 0 {
		if o.skipEmpty {
			texts = dropEmpty(texts)
		}
		log.Warn(emptyNotice(o.input, empty, o.skipEmpty))
	}
	runtime.LockOSThread() // libtorch's grad mode is per thread
	if err := modelref.Check(o.Model, ""); err != nil {
		return err
	}
	m, tok, _, dir, err := modelref.Load(ctx, o.Model, "", dev, log)
	if err != nil {
		return err
	}
	l, from, err := modelref.Embedding(dir, o.Pooling)
	if err != nil {
		return err
	}
	maxLength, lengthFrom := modelref.InputLength(o.MaxLength, l.MaxSeqLength, int(m.Config.MaxSequence()))
	e := &models.Embedder{Model: m, Tokenizer: tok, Pooling: l.Pooling, MaxLength: maxLength, Truncation: trunc, Precision: precision}
	log.Info("embedding", zap.Int("texts", len(texts)), zap.String("precision", precision.Describe(dev)), zap.String("model", dir), zap.String("pooling", string(l.Pooling)),
		zap.Bool("normalize", l.Normalize), zap.String("as", from), zap.Int("max_length", maxLength), zap.String("length_from", lengthFrom))
	return writeEmbeddings(ctx, o.output, texts, e, o.batchSize, l.Normalize)
}

// embedAbout is what embed --help says below its usage line.
const embedAbout = "Writes one JSON object per input text, {\"text\": ..., \"embedding\": [...]}, in input order.\n"
