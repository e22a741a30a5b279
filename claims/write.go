package claims

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"convrep/internal/atomicfile"
)

// JSONPath is where Write puts the JSON copy of a report written as Markdown at mdPath: the same name with
// .json for its extension (runs/claims/report.md → runs/claims/report.json).
func JSONPath(mdPath string) string {
	return strings.TrimSuffix(mdPath, filepath.Ext(mdPath)) + ".json"
}

// Write writes the report as Markdown at mdPath and as JSON at JSONPath(mdPath), each atomically (a reader
// sees the old file or the new one), making the folder when needed. It returns the JSON file's path.
func (r *Report) Write(mdPath string) (string, error) {
	jsonPath := JSONPath(mdPath)
	if jsonPath == mdPath {
		return "", fmt.Errorf("write report %s: the Markdown file must not end in .json (the JSON copy goes there)", mdPath)
	}
	if err := os.MkdirAll(filepath.Dir(mdPath), 0o755); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	var data bytes.Buffer
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(false) // statements hold ">" and "<"; keep them readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return "", fmt.Errorf("write report %s: %w", jsonPath, err)
	}
	if err := atomicfile.WriteFile(jsonPath, data.Bytes()); err != nil {
		return "", fmt.Errorf("write report %s: %w", jsonPath, err)
	}
	var b strings.Builder
	if err := r.Markdown(&b); err != nil {
		return "", fmt.Errorf("write report %s: %w", mdPath, err)
	}
	if err := atomicfile.WriteFile(mdPath, []byte(b.String())); err != nil {
		return "", fmt.Errorf("write report %s: %w", mdPath, err)
	}
	return jsonPath, nil
}
