package embedcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"convrep/internal/atomicfile"
	"convrep/internal/cli/progress"
	"convrep/models"
)

// readTexts reads one text per line (.txt) or the "text" field of one JSON object per line (.jsonl). empty
// are the line numbers of the texts that are empty or only white space: they are embedded like any other
// text (as [CLS] [SEP]), which is rarely what was meant, so the caller says so.
func readTexts(path string) (texts []string, empty []int, err error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("--input %s: no such file", path)
		}
		return nil, nil, fmt.Errorf("--input: %w", err)
	}
	defer f.Close()
	jsonl := strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".json")
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSuffix(sc.Text(), "\r")
		if jsonl {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			var rec struct {
				Text *string `json:"text"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: not a JSON object: %w", path, line, err)
			}
			if rec.Text == nil {
				return nil, nil, fmt.Errorf("%s:%d: no \"text\" field", path, line)
			}
			text = *rec.Text
		}
		if strings.TrimSpace(text) == "" {
			empty = append(empty, line)
		}
		texts = append(texts, text)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return texts, empty, nil
}

// dropEmpty returns texts without those that are empty or only white space.
func dropEmpty(texts []string) []string {
	kept := texts[:0:0]
	for _, t := range texts {
		if strings.TrimSpace(t) != "" {
			kept = append(kept, t)
		}
	}
	return kept
}

// emptyNotice is the warning for empty texts: how many, and the first few line numbers.
func emptyNotice(path string, empty []int, skipped bool) string {
	const shown = 5
	lines := make([]string, 0, shown)
	for _, l := range empty[:min(len(empty), shown)] {
		lines = append(lines, fmt.Sprint(l))
	}
	more := ""
	if len(empty) > shown {
		more = fmt.Sprintf(" and %d more", len(empty)-shown)
	}
	what := "embedded as the empty text ([CLS] [SEP]); pass --skip-empty to leave them out"
	if skipped {
		what = "left out (--skip-empty)"
	}
	return fmt.Sprintf("%s: %d empty text(s), at line %s%s: %s", path, len(empty), strings.Join(lines, ", "), more, what)
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
