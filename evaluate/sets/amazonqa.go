package sets

import (
	"bufio"
	"fmt"
	"strings"

	"convrep/evaluate"
)

// ReadAmazonQA reads an AmazonQA file (gzip when the name ends in .gz): one Python-literal dict per line with
// at least 'question' and 'answer' strings. Blank lines are skipped; row indices count the pairs read.
func ReadAmazonQA(path string) ([]evaluate.QAPair, error) {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []evaluate.QAPair
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		v, err := ParsePyLiteral(text)
		if err != nil {
			return nil, fmt.Errorf("read %s:%d: %w", path, line, err)
		}
		d, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("read %s:%d: want a dict, got %T", path, line, v)
		}
		var pair evaluate.QAPair
		for _, f := range []struct {
			key string
			dst *string
		}{{"question", &pair.Question}, {"answer", &pair.Answer}} {
			s, ok := d[f.key].(string)
			if !ok {
				return nil, fmt.Errorf("read %s:%d: key %q is missing or not a string", path, line, f.key)
			}
			*f.dst = s
		}
		out = append(out, pair)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read %s: file is empty", path)
	}
	return out, nil
}
