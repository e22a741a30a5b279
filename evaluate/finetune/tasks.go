package finetune

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"unicode"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/sets"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/tokenizers"
)

// The fine-tuning tasks of the papers' tables, above Train: trials over seeds and variants aggregated into
// result rows, the dialogue-act and bag-of-words examples, intent metrics with an out-of-scope class.

// Trial is one fine-tuning run: a fresh model, its training and validation examples.
type Trial struct {
	Variant    string
	Seed       uint64
	Train, Val []Example
}

// Scorer measures a fine-tuned classifier on the test set: metric name → value.
type Scorer func(*Classifier) (map[string]float64, error)

// Loader gives a fresh copy of the model under evaluation (fine-tuning changes its weights) and its name.
type Loader func() (*models.Model, *tokenizers.Tokenizer, string, error)

// Trials trains one fresh copy of the model per trial with cfg and the trial's seed, and scores each; it
// returns a row per variant and metric over the trials' seeds, and the model's name. cfg.MaxLength 0 is the
// model's limit.
func Trials(ctx context.Context, load Loader, cfg Config, trials []Trial, score Scorer, dataset, task string,
	metrics []string, settings map[string]any, log *zap.Logger) ([]evaluate.Row, string, error) {
	type key struct{ variant, metric string }
	values, seeds := map[key][]float64{}, map[key][]uint64{}
	var order []key
	var name string
	for i, r := range trials {
		model, tok, n, err := load()
		if err != nil {
			return nil, "", err
		}
		name = n
		c := cfg
		c.Seed = r.Seed
		if c.MaxLength == 0 {
			c.MaxLength = int(model.Config.MaxSequence())
		}
		log.Info("fine-tuning", zap.Int("run", i+1), zap.Int("of", len(trials)), zap.String("variant", r.Variant), zap.Uint64("seed", r.Seed),
			zap.Int("train", len(r.Train)), zap.Int("val", len(r.Val)))
		clf, run, err := Train(ctx, model, tok, r.Train, r.Val, c)
		if err != nil {
			Free(model)
			return nil, "", err
		}
		got, err := score(clf)
		Free(model)
		if err != nil {
			return nil, "", err
		}
		log.Info("fine-tuned", zap.Int("epochs", run.Epochs), zap.Int("steps", run.Steps), zap.Int("best_step", run.BestStep), zap.Float64("val", run.BestScore))
		for _, m := range metrics {
			k := key{r.Variant, m}
			if _, ok := values[k]; !ok {
				order = append(order, k)
			}
			values[k] = append(values[k], got[m])
			seeds[k] = append(seeds[k], r.Seed)
		}
	}
	var rows []evaluate.Row
	for _, k := range order {
		mean, std := evaluate.MeanStd(values[k])
		rows = append(rows, evaluate.Row{Model: name, Dataset: dataset, Task: task, Variant: k.variant, Metric: k.metric,
			Mean: mean, Std: std, Seeds: seeds[k], Values: values[k], Settings: settings})
	}
	return rows, name, nil
}

// Free releases a model's weights now rather than when the garbage collector gets to them: one model
// per run would otherwise pile up.
func Free(m *models.Model) {
	_ = torch.Catch("free the model", func() error { m.VS.Destroy(); return nil })
}

// ActExamples are dialogue-act examples as the classifier reads them: each input as TOD-BERT builds it
// (Format.Act: the history, the labelled system turn and the user turn answering it), the acts as label
// indices of labels. Examples TOD-BERT does not make (a system turn that ends its dialogue) are dropped.
func ActExamples(ex []sets.ActExample, labels []string, f Format) []Example {
	pos := labelIndex(labels)
	out := make([]Example, 0, len(ex))
	for _, e := range ex {
		text, ok := f.Act(e)
		if !ok {
			continue
		}
		out = append(out, Example{Text: text, Labels: indices(e.Labels, pos)})
	}
	return out
}

// ContextActExamples are the act examples of MGT's probe (§5.3): the input is the context before the
// labelled system turn (not that turn, nor the user's answer), the acts those of the system turn to come.
// Examples left with no context are dropped.
func ContextActExamples(ex []sets.ActExample, labels []string, f Format) []Example {
	pos := labelIndex(labels)
	out := make([]Example, 0, len(ex))
	for _, e := range ex {
		n := len(e.History)
		if n < 2 {
			continue
		}
		out = append(out, Example{Text: f.History(e.History[:n-1], roles(e)[:n-1]), Labels: indices(e.Labels, pos)})
	}
	return out
}

// roles returns e's turn roles, or, without them, roles alternating back from its last (system) turn.
func roles(e sets.ActExample) []bool {
	if len(e.System) == len(e.History) {
		return e.System
	}
	return alternating(len(e.History), true)
}

func labelIndex(labels []string) map[string]int {
	pos := make(map[string]int, len(labels))
	for i, l := range labels {
		pos[l] = i
	}
	return pos
}

func indices(labels []string, pos map[string]int) []int {
	out := make([]int, 0, len(labels))
	for _, l := range labels {
		out = append(out, pos[l])
	}
	return out
}

// TrainPool returns the rows fine-tuning draws from and the validation rows: the set's own train and
// validation splits, or, for MultiWOZ whose train split is absent here, a fixed 90/10 split of its validation
// dialogues' examples (seeded, so that every model sees the same one).
func TrainPool(s *sets.ActSet) (pool, val []sets.ActExample, note string) {
	if len(s.Train) > 0 {
		return s.Train, s.Val, ""
	}
	order := rand.New(rand.NewPCG(0, 0x6d756c7469776f7a)).Perm(len(s.Val)) // "multiwoz"
	cut := len(order) / 10
	for i, j := range order {
		if i < cut {
			val = append(val, s.Val[j])
		} else {
			pool = append(pool, s.Val[j])
		}
	}
	return pool, val, fmt.Sprintf("%s has no train split here: fine-tuning draws from 90%% of its validation examples and early-stops on the other 10%% (fixed, seed 0).", s.Dataset)
}

// IntentMetrics scores predicted classes; with an out-of-scope class (oos ≥ 0), FutureTOD's four numbers.
func IntentMetrics(pred []int, gold []Example, oos int) (map[string]float64, error) {
	g := make([]int, len(gold))
	for i, e := range gold {
		g[i] = e.Labels[0]
	}
	if oos < 0 {
		acc, err := evaluate.Accuracy(pred, g)
		return map[string]float64{"accuracy": acc}, err
	}
	// OOSMetrics flags a query out-of-scope when its score is below the threshold: here, when the classifier
	// chose the out-of-scope class.
	best := make([]float64, len(pred))
	for i := range pred {
		if pred[i] != oos {
			best[i] = 1
		}
		if g[i] == oos {
			g[i] = evaluate.OOS
		}
	}
	m, err := evaluate.OOSMetrics(pred, best, g, 0.5)
	return map[string]float64{"acc_all": m.Accuracy, "acc_in": m.InAccuracy, "acc_out": m.OOSAccuracy, "recall_out": m.OOSRecall}, err
}

// MergeSeedRows adds one seed's rows to the rows of the seeds before it (same order of metrics).
func MergeSeedRows(acc, next []evaluate.Row) []evaluate.Row {
	if acc == nil {
		return next
	}
	for i := range acc {
		acc[i].Seeds = append(acc[i].Seeds, next[i].Seeds...)
		acc[i].Values = append(acc[i].Values, next[i].Values...)
		acc[i].Mean, acc[i].Std = evaluate.MeanStd(acc[i].Values)
	}
	return acc
}

// BOWMinCount is how many training contexts a word's last utterance must hold it in to be a bag-of-words
// target; MGT §5.2 does not give its vocabulary, and rarer words would be targets no probe can learn.
const BOWMinCount = 5

// words splits an utterance into lower-cased runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// BOWVocabulary lists, sorted, the words in the last context utterance of at least BOWMinCount examples.
func BOWVocabulary(ex []sets.ActExample) []string {
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
		if n >= BOWMinCount {
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}

// BOWExamples pairs each context (the turns before the system response) with the vocabulary words of its
// last utterance.
func BOWExamples(ex []sets.ActExample, vocab []string, f Format) []Example {
	pos := make(map[string]int, len(vocab))
	for i, w := range vocab {
		pos[w] = i
	}
	var out []Example
	for _, e := range ex {
		if len(e.History) < 2 {
			continue
		}
		ctx := e.History[:len(e.History)-1]
		fe := Example{Text: f.History(ctx, roles(e)[:len(ctx)])}
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
