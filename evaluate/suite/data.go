package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"convrep/evaluate"
	"convrep/evaluate/sets"
	"convrep/internal/shared"
)

// Data say where a task's examples come from: a dataset name read from the shared evaluation folder in
// its upstream layout, or a user's files.
type Data struct {
	Dataset, Root, Train, Test        string
	TextColumn, LabelColumn, OOSLabel string
	SplitSeed                         uint64 // where a dataset's test examples are themselves drawn (Ubuntu's split points)
	Split                             string // response selection: which split of the dataset, test or val (MultiWOZ only)
}

// responseSets are the datasets response Selection knows by name.
var responseSets = []string{"amazonqa", "ubuntu", "multiwoz"}

// evalRoot is the folder holding the evaluation sets: --data-root, else ../shared/data/eval.
func (d Data) evalRoot() (string, error) {
	if d.Root != "" {
		return d.Root, nil
	}
	return shared.Path("data", "eval")
}

// clinc150 reads CLINC150's data_full.json under the evaluation root.
func (d Data) clinc150() (*sets.CLINC150, error) {
	root, err := d.evalRoot()
	if err != nil {
		return nil, err
	}
	return sets.ReadCLINC150(filepath.Join(root, "clinc150", "data", "data_full.json"))
}

// intentData returns the training and test splits of an intent task (out-of-scope test rows apart).
func (d Data) intentData() (name, source string, train, test, oos evaluate.Split, err error) {
	if d.Train != "" || d.Test != "" {
		if d.Train == "" || d.Test == "" {
			return "", "", nil, nil, nil, fmt.Errorf("--train and --test go together")
		}
		if train, err = d.readUserFile(d.Train); err != nil {
			return
		}
		var all evaluate.Split
		if all, err = d.readUserFile(d.Test); err != nil {
			return
		}
		for _, e := range all {
			if e.Label == d.OOSLabel {
				oos = append(oos, e)
			} else {
				test = append(test, e)
			}
		}
		train = dropLabel(train, d.OOSLabel)
		name = d.Dataset
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(d.Test), filepath.Ext(d.Test))
		}
		return name, d.Train, train, test, oos, nil
	}
	root, err := d.evalRoot()
	if err != nil {
		return
	}
	switch d.Dataset {
	case "clinc150":
		c, err := d.clinc150()
		if err != nil {
			return "", "", nil, nil, nil, err
		}
		return "clinc150", "clinc150/data/data_full.json#train", c.Train, c.Test, c.OOSTest, nil
	case "snips":
		if train, err = sets.ReadSNIPS(filepath.Join(root, "snips", "snips_train.json")); err != nil {
			return
		}
		if test, err = sets.ReadSNIPS(filepath.Join(root, "snips", "snips_test.json")); err != nil {
			return
		}
		return "snips", "snips/snips_train.json", train, test, nil, nil
	case "":
		err = fmt.Errorf("name a dataset (--dataset clinc150 or snips) or give --train and --test files")
	default:
		err = fmt.Errorf("--dataset %q has no intent data (known: clinc150, snips; or --train/--test files)", d.Dataset)
	}
	return
}

// oosTask returns the data of an out-of-scope task under protocol (evaluate.OOSAuthors or OOSPaper): the
// in-scope training and test rows, the out-of-scope test rows and, for the authors' protocol, the out-of-scope
// training rows that make its 151st prototype. For CLINC150 that protocol reads data_oos_plus.json, the
// "plus" set (250 out-of-scope training rows; the in-scope rows and the test rows are those of data_full.json)
// that the authors' data/process_evaluate.py loads (load_dataset("clinc_oos", "plus")); for --train files,
// the rows labelled --oos-label.
func (d Data) oosTask(protocol string) (evaluate.OOSTask, error) {
	if !slices.Contains(evaluate.OOSProtocols, protocol) {
		return evaluate.OOSTask{}, fmt.Errorf("--oos-protocol %q: want one of %s", protocol, strings.Join(evaluate.OOSProtocols, ", "))
	}
	name, source, train, test, oos, err := d.intentData()
	if err != nil {
		return evaluate.OOSTask{}, err
	}
	t := evaluate.OOSTask{Dataset: name, Source: source, Train: train, Test: test, OOS: oos, Protocol: protocol}
	if len(oos) == 0 {
		return t, fmt.Errorf("%s has no out-of-scope test rows (label %q)", name, d.OOSLabel)
	}
	if protocol != evaluate.OOSAuthors {
		return t, nil
	}
	switch {
	case d.Train != "":
		all, err := d.readUserFile(d.Train)
		if err != nil {
			return t, err
		}
		for _, e := range all {
			if e.Label == d.OOSLabel {
				t.OOSTrain = append(t.OOSTrain, e)
			}
		}
		if len(t.OOSTrain) == 0 {
			return t, fmt.Errorf("--oos-protocol authors: %s has no out-of-scope training rows (label %q) for the out-of-scope prototype", d.Train, d.OOSLabel)
		}
		t.Source = d.Train + " (in-scope rows, then the " + d.OOSLabel + " rows)"
	case name == "clinc150":
		root, err := d.evalRoot()
		if err != nil {
			return t, err
		}
		plus, err := sets.ReadCLINC150(filepath.Join(root, "clinc150", "data", "data_oos_plus.json"))
		if err != nil {
			return t, err
		}
		if len(plus.Train) != len(train) || len(plus.Test) != len(test) || len(plus.OOSTest) != len(oos) {
			return t, fmt.Errorf("clinc150: data_oos_plus.json holds %d/%d/%d train/test/oos_test rows, data_full.json %d/%d/%d: want the same",
				len(plus.Train), len(plus.Test), len(plus.OOSTest), len(train), len(test), len(oos))
		}
		t.Train, t.Test, t.OOS, t.OOSTrain = plus.Train, plus.Test, plus.OOSTest, plus.OOSTrain
		t.Source = "clinc150/data/data_oos_plus.json#train+oos_train"
	default:
		return t, fmt.Errorf("--oos-protocol authors: no out-of-scope training rows for %s", name)
	}
	return t, nil
}

// responseData returns a response-Selection set.
func (d Data) responseData() (*evaluate.RetrievalSet, error) {
	if d.Test != "" {
		rows, err := d.readUserFile(d.Test)
		if err != nil {
			return nil, err
		}
		name := d.Dataset
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(d.Test), filepath.Ext(d.Test))
		}
		set := &evaluate.RetrievalSet{Dataset: name, Source: d.Test}
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
	if d.responseSplit() != "test" && d.Dataset != "multiwoz" {
		return nil, fmt.Errorf("--split %s: only --dataset multiwoz has a validation split here (MultiWOZ 2.1 val, 1,000 dialogues); %q is read from its test data", d.Split, d.Dataset)
	}
	switch d.Dataset {
	case "amazonqa":
		pairs, err := sets.ReadAmazonQA(filepath.Join(root, "amazonqa", "qa_Video_Games.json.gz"))
		if err != nil {
			return nil, err
		}
		return evaluate.AmazonQASet(pairs, "amazonqa/qa_Video_Games.json.gz"), nil
	case "ubuntu":
		return sets.ReadUbuntuIRC(filepath.Join(root, "ubuntu_irc", "data", "test"), sets.UbuntuOptions{Seed: d.SplitSeed})
	case "multiwoz":
		set, err := sets.ReadMultiWOZResponses(filepath.Join(root, "multiwoz21"), d.responseSplit())
		if err == nil && d.responseSplit() != "test" {
			// A name of its own, so that a validation score is never laid in a test column by report, and
			// saved candidate lists (--write-splits) of the two splits never mix.
			set.Dataset += "-" + d.responseSplit()
		}
		return set, err
	case "":
		return nil, fmt.Errorf("name a dataset (--dataset %s) or give a --test file", strings.Join(responseSets, ", "))
	}
	return nil, fmt.Errorf("--dataset %q has no response-Selection data (known: %s; or a --test file)", d.Dataset, strings.Join(responseSets, ", "))
}

// responseSplit is the split response Selection reads: --split, test when not given.
func (d Data) responseSplit() string {
	if d.Split == "" {
		return "test"
	}
	return d.Split
}

// checkSplit checks --split before any data are read.
func (d Data) checkSplit() error {
	switch d.responseSplit() {
	case "test", "val":
		return nil
	}
	return fmt.Errorf("--split %q: want test or val", d.Split)
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
func (d Data) readUserFile(path string) (evaluate.Split, error) {
	col := d.LabelColumn
	if col == "" {
		var err error
		if col, err = sets.LabelColumn(path, d.TextColumn); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "evaluate: %s: taking column %q as the label (--label-column picks another)\n", path, col)
	}
	return sets.ReadUserFile(path, d.TextColumn, col)
}
