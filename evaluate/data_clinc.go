package evaluate

import "fmt"

// CLINC150 holds the splits of CLINC150's data_full.json. Out-of-scope rows carry the label OOSLabel.
type CLINC150 struct {
	Train, Val, Test          Split
	OOSTrain, OOSVal, OOSTest Split
}

// OOSLabel is CLINC150's label for out-of-scope utterances.
const OOSLabel = "oos"

// ReadCLINC150 reads data/data_full.json (or any file of that layout: {split: [[text, intent], ...]}).
// All six splits must be present.
func ReadCLINC150(path string) (*CLINC150, error) {
	var raw map[string][][]string
	if err := readJSONFile(path, &raw); err != nil {
		return nil, err
	}
	c := &CLINC150{}
	for _, s := range []struct {
		name string
		dst  *Split
	}{
		{"train", &c.Train}, {"val", &c.Val}, {"test", &c.Test},
		{"oos_train", &c.OOSTrain}, {"oos_val", &c.OOSVal}, {"oos_test", &c.OOSTest},
	} {
		rows, ok := raw[s.name]
		if !ok {
			return nil, fmt.Errorf("read %s: split %q is missing", path, s.name)
		}
		sp, err := pairsToSplit(path, s.name, rows)
		if err != nil {
			return nil, err
		}
		*s.dst = sp
	}
	return c, nil
}

// ReadSNIPS reads one of snips_train.json / snips_test.json ([[text, label], ...]).
func ReadSNIPS(path string) (Split, error) {
	var rows [][]string
	if err := readJSONFile(path, &rows); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("read %s: no examples", path)
	}
	return pairsToSplit(path, "snips", rows)
}
