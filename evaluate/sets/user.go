package sets

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"convrep/evaluate"
)

// ReadUserFile reads a user's labelled file: CSV (name ending .csv or .csv.gz, header row naming the columns)
// or JSON lines (anything else: one object per line holding the two fields). textCol and labelCol name the
// columns or fields. Row indices are 0-based over data rows (the CSV header and blank JSON lines not counted).
func ReadUserFile(path, textCol, labelCol string) (evaluate.Split, error) {
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

// labelNames are the column names taken for the label when none is given.
var labelNames = []string{"label", "intent", "category"}

// LabelColumn picks the label column of a user's file when none was named: the other column of a file of
// exactly two, else the one column named like a label (label, intent, category, any case). Otherwise the
// error lists the columns. It reads the CSV header, or the keys of the first JSON line.
func LabelColumn(path, textCol string) (string, error) {
	cols, err := userColumns(path)
	if err != nil {
		return "", err
	}
	if len(cols) == 2 && slices.Contains(cols, textCol) {
		if cols[0] == textCol {
			return cols[1], nil
		}
		return cols[0], nil
	}
	var named []string
	for _, c := range cols {
		if slices.Contains(labelNames, strings.ToLower(c)) {
			named = append(named, c)
		}
	}
	if len(named) == 1 {
		return named[0], nil
	}
	return "", fmt.Errorf("read %s: which column holds the label? Pass --label-column, one of: %s", path, strings.Join(cols, ", "))
}

// userColumns are the CSV header's columns, or the sorted keys of the first JSON line's object.
func userColumns(path string) ([]string, error) {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	if strings.HasSuffix(strings.ToLower(strings.TrimSuffix(path, ".gz")), ".csv") {
		header, err := csv.NewReader(r).Read()
		if err != nil {
			return nil, fmt.Errorf("read %s: header: %w", path, err)
		}
		for i, h := range header {
			header[i] = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		}
		return header, nil
	}
	var cols []string
	err = eachObject(path, r, func(_ int, obj map[string]any) (bool, error) {
		cols = slices.Sorted(maps.Keys(obj))
		return false, nil
	})
	if err == nil && cols == nil {
		err = fmt.Errorf("read %s: file is empty", path)
	}
	return cols, err
}

func readCSV(path string, r io.Reader, textCol, labelCol string) (evaluate.Split, error) {
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
		return nil, fmt.Errorf("read %s: line 1: label column %q is missing; the columns are %s", path, labelCol, strings.Join(header, ", "))
	}
	var out evaluate.Split
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
		out = append(out, evaluate.Example{Text: rec[ti], Label: rec[li]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read %s: no data rows after the header", path)
	}
	return out, nil
}

func readJSONLines(path string, r io.Reader, textCol, labelCol string) (evaluate.Split, error) {
	var out evaluate.Split
	err := eachObject(path, r, func(line int, obj map[string]any) (bool, error) {
		text, err := stringField(obj, textCol)
		if err != nil {
			return false, fmt.Errorf("read %s: line %d: %w", path, line, err)
		}
		label, err := stringField(obj, labelCol)
		if err != nil {
			return false, fmt.Errorf("read %s: line %d: %w; the fields are %s", path, line, err, strings.Join(slices.Sorted(maps.Keys(obj)), ", "))
		}
		if label == "" {
			return false, fmt.Errorf("read %s: line %d: empty label", path, line)
		}
		out = append(out, evaluate.Example{Text: text, Label: label})
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read %s: file is empty", path)
	}
	return out, nil
}

// eachObject calls fn with each non-blank line of a JSON-lines file as an object, and its line number, while
// fn says to go on; a line that is no JSON object is an error naming it.
func eachObject(path string, r io.Reader, fn func(line int, obj map[string]any) (bool, error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := strings.TrimSpace(sc.Text())
		if b == "" {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(b), &obj); err != nil {
			return fmt.Errorf("read %s: line %d: not a JSON object: %w", path, line, err)
		}
		more, err := fn(line, obj)
		if err != nil || !more {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
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
