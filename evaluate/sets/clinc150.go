package sets

import (
	"fmt"

	"convrep/evaluate"
)

// CLINC150 holds the splits of CLINC150's data_full.json. Out-of-scope rows carry the label OOSLabel.
type CLINC150 struct {
	Train, Val, Test          evaluate.Split
	OOSTrain, OOSVal, OOSTest evaluate.Split
}

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
		dst  *evaluate.Split
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
