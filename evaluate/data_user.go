package evaluate

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ReadUserFile reads a user's labelled file: CSV (name ending .csv or .csv.gz, header row naming the columns)
// or JSON lines (anything else: one object per line holding the two fields). textCol and labelCol name the
// columns or fields. Row indices are 0-based over data rows (the CSV header and blank JSON lines not counted).
func ReadUserFile(path, textCol, labelCol string) (Split, error) {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	name := strings.TrimSuffix(path, ".gz")
	if strings.HasSuffix(strings.ToLower(name), ".csv") {
		return readCSV(path, r, textCol, labelCol)
	}
	return readJSONLines(path, r, textCol, labelCol)
}

func readCSV(path string, r io.Reader, textCol, labelCol string) (Split, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: file is empty", path)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: header: %w", path, err)
	}
	ti, li := -1, -1
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if h == textCol && ti < 0 {
			ti = i
		}
		if h == labelCol && li < 0 {
			li = i
		}
	}
	if ti < 0 {
		return nil, fmt.Errorf("read %s: line 1: text column %q is missing (header %q)", path, textCol, header)
	}
	if li < 0 {
		return nil, fmt.Errorf("read %s: line 1: label column %q is missing (header %q)", path, labelCol, header)
	}
	var out Split
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// csv.ParseError already names the line and column.
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		line, _ := cr.FieldPos(0)
		if rec[li] == "" {
			return nil, fmt.Errorf("read %s: line %d: empty label", path, line)
		}
		out = append(out, Example{Text: rec[ti], Label: rec[li]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read %s: no data rows after the header", path)
	}
	return out, nil
}

func readJSONLines(path string, r io.Reader, textCol, labelCol string) (Split, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out Split
	for line := 1; sc.Scan(); line++ {
		b := strings.TrimSpace(sc.Text())
		if b == "" {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(b), &obj); err != nil {
			return nil, fmt.Errorf("read %s: line %d: not a JSON object: %w", path, line, err)
		}
		text, err := stringField(obj, textCol)
		if err != nil {
			return nil, fmt.Errorf("read %s: line %d: %w", path, line, err)
		}
		label, err := stringField(obj, labelCol)
		if err != nil {
			return nil, fmt.Errorf("read %s: line %d: %w", path, line, err)
		}
		if label == "" {
			return nil, fmt.Errorf("read %s: line %d: empty label", path, line)
		}
		out = append(out, Example{Text: text, Label: label})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read %s: file is empty", path)
	}
	return out, nil
}

// stringField returns obj[key] as a string; numbers and booleans are accepted as labels and printed as JSON.
func stringField(obj map[string]any, key string) (string, error) {
	v, ok := obj[key]
	if !ok {
		return "", fmt.Errorf("field %q is missing", key)
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case float64, bool:
		b, _ := json.Marshal(x)
		return string(b), nil
	default:
		return "", fmt.Errorf("field %q is %T, want a string", key, v)
	}
}
