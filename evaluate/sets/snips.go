package sets

import (
	"fmt"

	"convrep/evaluate"
)

// ReadSNIPS reads one of snips_train.json / snips_test.json ([[text, label], ...]).
func ReadSNIPS(path string) (evaluate.Split, error) {
	var rows [][]string
	if err := readJSONFile(path, &rows); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("read %s: no examples", path)
	}
	return pairsToSplit(path, "snips", rows)
}
