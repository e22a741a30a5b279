package embedcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// writeEmbeddings embeds texts in batches sorted by length (Embedder.EmbedAll) and writes the JSON lines in
// input order, L2-normalised when normalize, atomically: an interrupted run leaves no partial output.
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
	vecs, err := e.EmbedAll(ctx, texts, batchSize, bar.Add)
	bar.Finish()
	if err != nil {
		return fmt.Errorf("embed %s: %w", path, err)
	}
	err = atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for i, v := range vecs {
			if normalize {
				models.Unit(v)
			}
			if err := enc.Encode(record{Text: texts[i], Embedding: v}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

type record struct {
	Text      string    `json:"text"`
	Embedding []float32 `json:"embedding"`
}
