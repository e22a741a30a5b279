// Command benchembed is convrep's side of scripts/bench_embed.sh, the inference benchmark against ONNX Runtime
// and PyTorch on the same weights, texts and batches:
//
//	benchembed prepare --model DIR --woz FILE --texts 2048 --max-length 32 --out FILE
//	benchembed random --like DIR --layers 12 --hidden 768 --heads 12 --ffn 3072 --out DIR
//	benchembed time --model DIR --ids FILE --precision fp32|bf16 --batch 64 --threads 2 --rounds 3 [--vectors FILE]
//
// prepare tokenises the first --texts utterances of a WOZ 2.0 file (system, then user, turn by turn) with the
// model's tokenizer, cut to --max-length tokens, and writes their token ids sorted by length (shortest
// first, as models.Embedder.EmbedAll orders them), one JSON array a line: every system cuts its batches from
// this file in order. random writes a model folder of a given shape with random weights (seed 1) and the
// tokenizer of --like. time embeds the ids in batches of --batch through models.Embedder.EmbedEncoded and
// prints one JSON line: texts/s of the best round and the median, after one warm-up round; --vectors writes
// the mean-pooled vectors (little-endian float32, in file order) for the parity check.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sugarme/gotch"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/tokenizers"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchembed prepare|random|time [flags] (see the package doc)")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "prepare":
		err = prepare(os.Args[2:])
	case "random":
		err = random(os.Args[2:])
	case "time":
		err = timeIt(os.Args[2:])
	default:
		err = fmt.Errorf("unknown step %q: prepare, random or time", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchembed:", err)
		os.Exit(1)
	}
}

func prepare(args []string) error {
	fs := flag.NewFlagSet("prepare", flag.ContinueOnError)
	model := fs.String("model", "", "model folder whose tokenizer cuts the texts")
	woz := fs.String("woz", "", "WOZ 2.0 dialogues (woz_train_en.json)")
	n := fs.Int("texts", 2048, "how many utterances")
	maxLength := fs.Int("max-length", 32, "longest input in tokens, special tokens included")
	out := fs.String("out", "", "where to write the token ids, one JSON array a line")
	if err := fs.Parse(args); err != nil {
		return err
	}
	texts, err := wozTexts(*woz, *n)
	if err != nil {
		return err
	}
	tok, err := tokenizers.Load(*model)
	if err != nil {
		return err
	}
	rows := make([][]int64, len(texts))
	tokens := 0
	for i, t := range texts {
		ids, _, _, err := tok.EncodeOne(t, tokenizers.BatchOptions{MaxLength: *maxLength, Truncation: tokenizers.TruncateRight})
		if err != nil {
			return fmt.Errorf("text %d: %w", i+1, err)
		}
		rows[i], tokens = ids, tokens+len(ids)
	}
	slices.SortStableFunc(rows, func(a, b []int64) int { return len(a) - len(b) })
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, r := range rows {
		b, _ := json.Marshal(r)
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d texts, %d tokens (at most %d each), sorted by length, in %s\n", len(rows), tokens, *maxLength, *out)
	return f.Close()
}

// wozTexts is the first n non-empty utterances of a WOZ 2.0 file, each turn's system utterance then its user's.
func wozTexts(path string, n int) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var dialogues []struct {
		Dialogue []struct {
			System string `json:"system_transcript"`
			User   string `json:"transcript"`
		} `json:"dialogue"`
	}
	if err := json.Unmarshal(b, &dialogues); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var texts []string
	for _, d := range dialogues {
		for _, t := range d.Dialogue {
			for _, s := range []string{t.System, t.User} {
				if s = strings.TrimSpace(s); s != "" && len(texts) < n {
					texts = append(texts, s)
				}
			}
		}
	}
	if len(texts) < n {
		return nil, fmt.Errorf("%s has %d utterances, %d asked", path, len(texts), n)
	}
	return texts, nil
}

func random(args []string) error {
	fs := flag.NewFlagSet("random", flag.ContinueOnError)
	like := fs.String("like", "", "model folder whose config and tokenizer files to take")
	layers := fs.Int64("layers", 12, "layers")
	hidden := fs.Int64("hidden", 768, "hidden size")
	heads := fs.Int64("heads", 12, "attention heads")
	ffn := fs.Int64("ffn", 3072, "feed-forward size")
	out := fs.String("out", "", "model folder to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := models.ReadConfig(filepath.Join(*like, "config.json"))
	if err != nil {
		return err
	}
	c.NumLayers, c.HiddenSize, c.NumHeads, c.IntermediateSize = *layers, *hidden, *heads, *ffn
	if err := torch.ManualSeed(1); err != nil {
		return err
	}
	m, err := models.New(c, models.Heads{}, gotch.CPU)
	if err != nil {
		return err
	}
	if err := m.Save(*out); err != nil {
		return err
	}
	entries, err := os.ReadDir(*like)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "vocab") || strings.HasPrefix(name, "tokenizer") || strings.HasPrefix(name, "special_tokens") || name == "added_tokens.json" {
			b, err := os.ReadFile(filepath.Join(*like, name))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func timeIt(args []string) error {
	fs := flag.NewFlagSet("time", flag.ContinueOnError)
	dir := fs.String("model", "", "model folder")
	idsPath := fs.String("ids", "", "token ids from prepare")
	precision := fs.String("precision", "fp32", "fp32 or bf16")
	batch := fs.Int("batch", 64, "texts per forward pass")
	threads := fs.Int("threads", 2, "libtorch intra-op threads")
	rounds := fs.Int("rounds", 3, "timed rounds over every text, after one warm-up round")
	vectors := fs.String("vectors", "", "where to write the vectors (little-endian float32, in file order)")
	name := fs.String("name", "", "the model's name in the JSON line")
	if err := fs.Parse(args); err != nil {
		return err
	}
	runtime.LockOSThread()
	if err := torch.SetNumThreads(*threads); err != nil {
		return err
	}
	prec, err := models.ParsePrecision(*precision, gotch.CPU)
	if err != nil {
		return err
	}
	rows, tokens, err := readIDs(*idsPath)
	if err != nil {
		return err
	}
	m, err := models.Load(*dir, models.LoadOptions{Device: gotch.CPU})
	if err != nil {
		return err
	}
	tok, err := tokenizers.Load(*dir)
	if err != nil {
		return err
	}
	e := &models.Embedder{Model: m, Tokenizer: tok, Pooling: models.Mean, Precision: prec}
	var vecs [][]float32
	round := func() (time.Duration, error) {
		vecs = vecs[:0]
		start := time.Now()
		for i := 0; i < len(rows); i += *batch {
			v, err := e.EmbedEncoded(rows[i:min(i+*batch, len(rows))])
			if err != nil {
				return 0, err
			}
			vecs = append(vecs, v...)
		}
		return time.Since(start), nil
	}
	if _, err := round(); err != nil { // warm-up: packs the weights, primes oneDNN's kernels
		return err
	}
	var rates []float64
	for range *rounds {
		d, err := round()
		if err != nil {
			return err
		}
		rates = append(rates, float64(len(rows))/d.Seconds())
	}
	if *vectors != "" {
		if err := writeVectors(*vectors, vecs); err != nil {
			return err
		}
	}
	slices.Sort(rates)
	line, _ := json.Marshal(map[string]any{
		"system": "convrep " + string(prec), "model": *name, "texts": len(rows), "tokens": tokens, "batch": *batch,
		"threads": *threads, "rounds": *rounds, "texts_per_s": math.Round(rates[len(rates)-1]*10) / 10,
		"median_texts_per_s": math.Round(rates[len(rates)/2]*10) / 10, "how": prec.Describe(gotch.CPU),
	})
	fmt.Println(string(line))
	return nil
}

func readIDs(path string) ([]models.Encoded, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	var rows []models.Encoded
	tokens := 0
	dec := json.NewDecoder(f)
	for {
		var ids []int64
		if err := dec.Decode(&ids); err == io.EOF {
			break
		} else if err != nil {
			return nil, 0, fmt.Errorf("%s line %d: %w", path, len(rows)+1, err)
		}
		rows = append(rows, models.Encoded{IDs: ids, TypeIDs: make([]int64, len(ids)), Full: len(ids)})
		tokens += len(ids)
	}
	return rows, tokens, nil
}

func writeVectors(path string, vecs [][]float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, v := range vecs {
		if err := binary.Write(w, binary.LittleEndian, v); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
