package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"convrep/evaluate"
	"convrep/internal/shared"
)

// dataFlags say where a task's examples come from: a dataset name read from the shared evaluation folder in
// its upstream layout, or a user's files.
type dataFlags struct {
	dataset, root, train, test  string
	textCol, labelCol, oosLabel string
	splitSeed                   uint64 // where a dataset's test examples are themselves drawn (Ubuntu's split points)
}

// The datasets each kind of task knows by name.
var (
	intentSets   = []string{"clinc150", "snips"}
	responseSets = []string{"amazonqa", "ubuntu", "multiwoz"}
)

// evalRoot is the folder holding the evaluation sets: --data-root, else ../shared/data/eval.
func (d dataFlags) evalRoot() (string, error) {
	if d.root != "" {
		return d.root, nil
	}
	return shared.Path("data", "eval")
}

// clinc150 reads CLINC150's data_full.json under the evaluation root.
func (d dataFlags) clinc150() (*evaluate.CLINC150, error) {
	root, err := d.evalRoot()
	if err != nil {
		return nil, err
	}
	return evaluate.ReadCLINC150(filepath.Join(root, "clinc150", "data", "data_full.json"))
}

// intentData returns the training and test splits of an intent task (out-of-scope test rows apart).
func (d dataFlags) intentData() (name, source string, train, test, oos evaluate.Split, err error) {
	if d.train != "" || d.test != "" {
		if d.train == "" || d.test == "" {
			return "", "", nil, nil, nil, fmt.Errorf("--train and --test go together")
		}
		if train, err = d.readUserFile(d.train); err != nil {
			return
		}
		var all evaluate.Split
		if all, err = d.readUserFile(d.test); err != nil {
			return
		}
		for _, e := range all {
			if e.Label == d.oosLabel {
				oos = append(oos, e)
			} else {
				test = append(test, e)
			}
		}
		train = dropLabel(train, d.oosLabel)
		name = d.dataset
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(d.test), filepath.Ext(d.test))
		}
		return name, d.train, train, test, oos, nil
	}
	root, err := d.evalRoot()
	if err != nil {
		return
	}
	switch d.dataset {
	case "clinc150":
		c, err := d.clinc150()
		if err != nil {
			return "", "", nil, nil, nil, err
		}
		return "clinc150", "clinc150/data/data_full.json#train", c.Train, c.Test, c.OOSTest, nil
	case "snips":
		if train, err = evaluate.ReadSNIPS(filepath.Join(root, "snips", "snips_train.json")); err != nil {
			return
		}
		if test, err = evaluate.ReadSNIPS(filepath.Join(root, "snips", "snips_test.json")); err != nil {
			return
		}
		return "snips", "snips/snips_train.json", train, test, nil, nil
	case "":
		err = fmt.Errorf("name a dataset (--dataset clinc150 or snips) or give --train and --test files")
	default:
		err = fmt.Errorf("--dataset %q has no intent data (known: clinc150, snips; or --train/--test files)", d.dataset)
	}
	return
}

// responseData returns a response-selection set.
func (d dataFlags) responseData() (*evaluate.RetrievalSet, error) {
	if d.test != "" {
		rows, err := d.readUserFile(d.test)
		if err != nil {
			return nil, err
		}
		name := d.dataset
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(d.test), filepath.Ext(d.test))
		}
		set := &evaluate.RetrievalSet{Dataset: name, Source: d.test}
		for _, r := range rows {
			set.Contexts = append(set.Contexts, []string{r.Text})
			set.Responses = append(set.Responses, r.Label)
		}
		return set, nil
	}
	root, err := d.evalRoot()
	if err != nil {
		return nil, err
	}
	switch d.dataset {
	case "amazonqa":
		pairs, err := evaluate.ReadAmazonQA(filepath.Join(root, "amazonqa", "qa_Video_Games.json.gz"))
		if err != nil {
			return nil, err
		}
		return evaluate.AmazonQASet(pairs, "amazonqa/qa_Video_Games.json.gz"), nil
	case "ubuntu":
		return evaluate.ReadUbuntuIRC(filepath.Join(root, "ubuntu_irc", "data", "test"), evaluate.UbuntuOptions{Seed: d.splitSeed})
	case "multiwoz":
		return evaluate.ReadMultiWOZResponses(filepath.Join(root, "multiwoz21"), "test")
	case "":
		return nil, fmt.Errorf("name a dataset (--dataset %s) or give a --test file", strings.Join(responseSets, ", "))
	}
	return nil, fmt.Errorf("--dataset %q has no response-selection data (known: %s; or a --test file)", d.dataset, strings.Join(responseSets, ", "))
}

func dropLabel(s evaluate.Split, label string) evaluate.Split {
	var out evaluate.Split
	for _, e := range s {
		if e.Label != label {
			out = append(out, e)
		}
	}
	return out
}

// readUserFile reads a --train or --test file, finding its label column when --label-column was not given
// and saying which it took.
func (d dataFlags) readUserFile(path string) (evaluate.Split, error) {
	col := d.labelCol
	if col == "" {
		var err error
		if col, err = evaluate.LabelColumn(path, d.textCol); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "evaluate: %s: taking column %q as the label (--label-column picks another)\n", path, col)
	}
	return evaluate.ReadUserFile(path, d.textCol, col)
}
