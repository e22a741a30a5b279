package suite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/modelref"
)

func init() {
	Register(Task{Name: "lengths", Section: Similarity,
		Summary:  "how many of a dataset's inputs fit in 32, 64, 128, ... tokens of the model's tokenizer (DSE App. B.1's 99%)",
		Synopsis: "--model M (--dataset clinc150|snips|amazonqa|ubuntu|multiwoz | --train F --test F | --test F --response) [flags]",
		About: "The input lengths of a dataset in tokens of the model's tokenizer, special tokens included, as the similarity\n" +
			"tasks write their inputs: an intent set's training and test texts; a response-selection set's queries (the\n" +
			"history joined with the separator token) and responses. For each length of --lengths, the share of inputs that\n" +
			"fit whole (a longer one is cut: a query loses its oldest tokens, a text its last); the notes give the median,\n" +
			"the 90th and 99th percentiles and the longest. DSE App. B.1 chose its lengths (64, 128) as \"a number that can\n" +
			"fit at least 99% of the samples\"; this measures it on the data at hand. Only the tokenizer is used.",
		Data: "any set of evaluate intent or evaluate response: CLINC150, SNIPS, AmazonQA, Ubuntu IRC, MultiWOZ 2.1 under --data-root, or --train/--test files",
		New:  func() Options { return new(LengthsOptions) }})
}

// LengthsOptions are evaluate lengths's settings.
type LengthsOptions struct {
	Model    Model // Ref and Checkpoint name the tokenizer (the model is loaded and freed)
	Data     Data
	Response bool   // read Data.Test as queries and responses (a response-selection file) rather than labelled texts
	Lengths  []int  // token counts to report the share of inputs within
	Output   string // the result's JSON file ("": Markdown on stdout)
}

// Flags declares evaluate lengths's flags.
func (o *LengthsOptions) Flags(f *Flags) {
	f.StringVar(&o.Model.Ref, "model", "", "the model whose tokenizer counts: a convrep run folder, a model folder, a hub name, or an experiment .toml (required)")
	f.StringVar(&o.Model.Checkpoint, "checkpoint", "", "with an experiment .toml as --model: a checkpoint of its run (the tokenizer is the run's)")
	f.StringVar(&o.Data.Dataset, "dataset", "", "a dataset read in its upstream layout from --data-root: "+strings.Join(append([]string{"clinc150", "snips"}, responseSets...), ", "))
	f.StringVar(&o.Data.Root, "data-root", "", "folder of the evaluation sets (default: data/eval in the shared folder, $CONVREP_SHARED or else ../shared from the working directory)")
	f.StringVar(&o.Data.Train, "train", "", "a CSV or JSON lines file of labelled training texts")
	f.StringVar(&o.Data.Test, "test", "", "a CSV or JSON lines file of test texts (with --response: of queries and their responses)")
	f.StringVar(&o.Data.TextColumn, "text-column", "text", "the text column or field of --train/--test")
	f.StringVar(&o.Data.LabelColumn, "label-column", "", "the label (or response) column or field of --train/--test; default: the other column of a two-column file, or the one named label, intent or category")
	f.BoolVar(&o.Response, "response", false, "read --test as a response-selection file: its text column the queries, its label column the responses")
	f.Uint64Var(&o.Data.SplitSeed, "split-seed", 1, "seed choosing each Ubuntu IRC conversation's split point (the test set itself)")
	f.Parsed("lengths", "32,64,128,256,512", "token counts to report the share of inputs within, a list", func(s string) (err error) {
		o.Lengths, err = ParseShots(s)
		if err != nil {
			err = fmt.Errorf("--lengths %q: want positive token counts", s)
		}
		return err
	})
	f.StringVar(&o.Output, "output", "", "write the result as JSON to this file (and a Markdown table beside it, .md); default: Markdown on stdout")
	o.Model.Device, o.Data.OOSLabel = "cpu", evaluate.OOSLabel
}

// Run counts the inputs' tokens and writes the share within each length.
func (o *LengthsOptions) Run(ctx context.Context, log *zap.Logger) error {
	start := time.Now()
	if err := modelref.Check(o.Model.Ref, o.Model.Checkpoint); err != nil {
		return err
	}
	response := o.Response || slices.Contains(responseSets, o.Data.Dataset)
	var name string
	var inputs map[string][]string // by kind: texts, or queries and responses
	var history [][]string         // a response set's queries, as turns, joined once the separator is known
	if response {
		set, err := o.Data.responseData()
		if err != nil {
			return err
		}
		name, history, inputs = set.Dataset, set.Contexts, map[string][]string{"responses": set.Responses}
	} else {
		ds, _, train, test, oos, err := o.Data.intentData()
		if err != nil {
			return err
		}
		name, inputs = ds, map[string][]string{"texts": texts(append(append(append(evaluate.Split{}, train...), test...), oos...))}
	}
	model, tok, modelName, err := loadModel(ctx, o.Model, log)
	if err != nil {
		return err
	}
	finetune.Free(model) // only the tokenizer counts
	if history != nil {
		sep, _ := tok.SpecialToken("sep_token")
		s := &evaluate.Session{Sep: datasets.SepFor(sep)}
		for _, turns := range history {
			inputs["queries"] = append(inputs["queries"], s.JoinHistory(turns))
		}
	}
	res := &evaluate.Result{Model: modelName, Task: "lengths"}
	for _, kind := range slices.Sorted(maps.Keys(inputs)) {
		n := make([]int, len(inputs[kind]))
		for i, text := range inputs[kind] {
			ids, err := tok.Encode(text)
			if err != nil {
				return fmt.Errorf("%s: %s %d: %w", name, kind, i, err)
			}
			n[i] = len(ids)
		}
		if len(n) == 0 {
			return fmt.Errorf("%s: no %s to count", name, kind)
		}
		slices.Sort(n)
		at := func(q float64) int { return n[min(len(n)-1, int(q*float64(len(n))))] }
		for _, l := range o.Lengths {
			fit := float64(sortedUpTo(n, l)) / float64(len(n))
			res.Rows = append(res.Rows, evaluate.Row{Model: modelName, Dataset: name, Task: "lengths", Variant: kind + " ≤ " + strconv.Itoa(l) + " tokens",
				Metric: "share", Mean: fit, Values: []float64{fit}, Settings: map[string]any{"inputs": len(n), "max_length": l}})
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%s %s: %d inputs; tokens, special ones included: median %d, 90th percentile %d, 99th percentile %d, longest %d.",
			name, kind, len(n), at(0.5), at(0.9), at(0.99), n[len(n)-1]))
	}
	res.WallSeconds = time.Since(start).Seconds()
	return writeResult(res, o.Output)
}

// sortedUpTo is the number of values of the sorted n that are at most l.
func sortedUpTo(n []int, l int) int {
	i, _ := slices.BinarySearch(n, l+1)
	return i
}
