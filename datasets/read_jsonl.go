package datasets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// The unified format: one Dialogue per line as JSON, {"id", "corpus", "domain", "turns": [{"speaker",
// "text"}]}, in the order read.

// WriteJSONL writes ds as JSON lines.
func WriteJSONL(w io.Writer, ds []Dialogue) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // keep "&" and "<" readable; the text is not for a browser
	for i := range ds {
		if err := enc.Encode(&ds[i]); err != nil {
			return fmt.Errorf("write dialogue %s: %w", ds[i].ID, err)
		}
	}
	return nil
}

// ReadJSONL reads a file written by WriteJSONL (gzip-compressed when its name ends in .gz). Every line must
// be a dialogue with an id, a corpus and turns of a known speaker.
func ReadJSONL(path string) ([]Dialogue, error) {
	var ds []Dialogue
	err := readFile(path, func(r io.Reader) error {
		br := bufio.NewReaderSize(r, 1<<20)
		for n := 1; ; n++ {
			line, err := br.ReadBytes('\n')
			if err != nil && err != io.EOF {
				return fmt.Errorf("%s: line %d: %w", path, n, err)
			}
			if len(bytes.TrimSpace(line)) > 0 {
				var d Dialogue
				if err := json.Unmarshal(line, &d); err != nil {
					return fmt.Errorf("%s: line %d: %w", path, n, err)
				}
				if err := checkDialogue(d); err != nil {
					return fmt.Errorf("%s: line %d: %w", path, n, err)
				}
				ds = append(ds, d)
			}
			if err == io.EOF {
				return nil
			}
		}
	})
	return ds, err
}

func checkDialogue(d Dialogue) error {
	if d.ID == "" || d.Corpus == "" {
		return missing("id or corpus")
	}
	for j, t := range d.Turns {
		if t.Speaker != User && t.Speaker != System {
			return fmt.Errorf("dialogue %s turn %d: speaker %q is neither user nor system", d.ID, j, t.Speaker)
		}
	}
	return nil
}
