package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/tokenizers"
)

// bowMinCount is how many training contexts a word's last utterance must hold it in to be a bag-of-words
// target; MGT §5.2 does not give its vocabulary, and rarer words would be targets no probe can learn.
const bowMinCount = 5

func runProbe(ctx context.Context, args []string, log *zap.Logger) error {
	var c common
	var f ftFlags
	fs := newFlags("probe", "--model M --probe bow|acts [--dataset multiwoz] [flags]",
		"Linear probes on frozen representations (MGT §5.2-5.3): the encoder embeds each MultiWOZ dialogue context (the\n"+
			"turns before a system response) once, and only a linear layer trains. bow predicts the words of the context's\n"+
			"last utterance; acts predicts the dialogue acts of the next system response. Micro and macro F1 on the test split.")
	c.register(fs, 128)
	f.register(fs, 1e-3)
	probe := fs.String("probe", "bow", "bow or acts")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *probe != "bow" && *probe != "acts" {
		return fmt.Errorf("--probe %q is not bow or acts", *probe)
	}
	if c.data.dataset == "" {
		c.data.dataset = "multiwoz"
	}
	p, err := prepare(&c, false, "")
	if err != nil {
		return err
	}
	set, err := readActs(c.data)
	if err != nil {
		return err
	}
	pool, val, note := trainPool(set)
	sep, err := separator(ctx, &c, log)
	if err != nil {
		return err
	}
	labels := set.Labels
	build := func(ex []evaluate.ActExample) []finetune.Example { return actExamples(ex, labels, sep, true) }
	if *probe == "bow" {
		labels = bowVocabulary(pool)
		build = func(ex []evaluate.ActExample) []finetune.Example { return bowExamples(ex, labels, sep) }
	}
	test := build(set.Test)
	var runs []ftRun
	for _, seed := range p.seeds {
		runs = append(runs, ftRun{variant: "linear probe", seed: seed, train: build(pool), val: build(val)})
	}
	start := time.Now()
	cfg := finetune.Config{Classes: len(labels), MultiLabel: true, Frozen: true, MaxLength: c.model.maxLength, Truncation: tokenizers.TruncateLeft}
	score := func(clf *finetune.Classifier) (map[string]float64, error) {
		m, err := clf.Evaluate(test)
		return map[string]float64{"micro_f1": m.MicroF1, "macro_f1": m.MacroF1}, err
	}
	settings := map[string]any{"probe": *probe, "targets": len(labels), "epochs": f.epochs, "lr": f.lr, "max_length": c.model.maxLength, "test_examples": len(test)}
	rows, model, err := fineTune(ctx, &c, f, cfg, runs, score, set.Dataset, "probe-"+*probe, []string{"micro_f1", "macro_f1"}, settings, log)
	if err != nil {
		return err
	}
	res := &evaluate.Result{Model: model, Task: "probe-" + *probe, Rows: rows, Notes: nonEmpty(note), WallSeconds: time.Since(start).Seconds()}
	if *probe == "bow" {
		res.Notes = append(res.Notes, fmt.Sprintf("Bag-of-words targets: the %d words (lower-cased letter/digit runs) found in the last utterance of at least %d training contexts.", len(labels), bowMinCount))
	}
	return writeResult(res, c.output)
}

// words splits an utterance into lower-cased runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// bowVocabulary lists, sorted, the words in the last context utterance of at least bowMinCount examples.
func bowVocabulary(ex []evaluate.ActExample) []string {
	count := map[string]int{}
	for _, e := range ex {
		if len(e.History) < 2 {
			continue
		}
		seen := map[string]bool{}
		for _, w := range words(e.History[len(e.History)-2]) {
			if !seen[w] {
				seen[w] = true
				count[w]++
			}
		}
	}
	var out []string
	for w, n := range count {
		if n >= bowMinCount {
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}

// bowExamples pairs each context (the turns before the system response) with the vocabulary words of its
// last utterance.
func bowExamples(ex []evaluate.ActExample, vocab []string, sep string) []finetune.Example {
	pos := make(map[string]int, len(vocab))
	for i, w := range vocab {
		pos[w] = i
	}
	var out []finetune.Example
	for _, e := range ex {
		if len(e.History) < 2 {
			continue
		}
		ctx := e.History[:len(e.History)-1]
		fe := finetune.Example{Text: historyText(ctx, sep)}
		seen := map[int]bool{}
		for _, w := range words(ctx[len(ctx)-1]) {
			if i, ok := pos[w]; ok && !seen[i] {
				seen[i] = true
				fe.Labels = append(fe.Labels, i)
			}
		}
		out = append(out, fe)
	}
	return out
}
