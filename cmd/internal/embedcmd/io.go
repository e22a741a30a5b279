package embedcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"convrep/internal/atomicfile"
	"convrep/internal/progress"
	"convrep/models"
)

// readTexts reads one text per line (.txt) or the "text" field of one JSON object per line (.jsonl).
func readTexts(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	defer f.Close()
	jsonl := strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".json")
	var texts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if !jsonl {
			texts = append(texts, strings.TrimSuffix(sc.Text(), "\r"))
			continue
		}
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var rec struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: not a JSON object: %w", path, line, err)
		}
		if rec.Text == nil {
			return nil, fmt.Errorf("%s:%d: no \"text\" field", path, line)
		}
		texts = append(texts, *rec.Text)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return texts, nil
}

// writeEmbeddings embeds texts in batches and writes the JSON lines atomically, L2-normalised when normalize:
// an interrupted run leaves no partial output.
func writeEmbeddings(ctx context.Context, path string, texts []string, e *models.Embedder, batchSize int, normalize bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	var bar *progress.Bar
	if len(texts) > batchSize {
		bar = progress.New(os.Stderr, "embedding", "texts", int64(len(texts)), 0)
	} else {
		bar = progress.New(nil, "", "", 0, 0)
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for start := 0; start < len(texts); start += batchSize {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("stopped after %d of %d texts: %w", start, len(texts), err)
			}
			end := min(start+batchSize, len(texts))
			vecs, err := e.Embed(texts[start:end])
			if err != nil {
				return fmt.Errorf("texts %d-%d: %w", start+1, end, err)
			}
			for i, v := range vecs {
				if normalize {
					unit(v)
				}
				if err := enc.Encode(record{Text: texts[start+i], Embedding: v}); err != nil {
					return err
				}
			}
			bar.Add(end - start)
		}
		return nil
	})
	bar.Finish()
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

type record struct {
	Text      string    `json:"text"`
	Embedding []float32 `json:"embedding"`
}

// unit scales v to length 1 in place (a zero vector stays zero), as sentence-transformers' Normalize does.
func unit(v []float32) {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n = math.Sqrt(n); n > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / n)
		}
	}
}
