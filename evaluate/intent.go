package evaluate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// IntentTask is few-shot intent classification with prototypical networks (DSE §4.2, Appendix B): for each
// shot count k and seed, a k-shot support set is drawn from Train (SampleSupport), each intent's prototype is
// the mean of its normalised support embeddings, and every Test query goes to the prototype with the largest
// dot product. Accuracy is reported as its mean and std over the seeds.
type IntentTask struct {
	Dataset string // the name in outputs and split files: clinc150, snips, or a user's
	Source  string // the file and split the training rows come from, recorded in split files
	Train   Split
	Test    Split
	Shots   []int
	Seeds   []uint64
	Splits  SplitIO
}

// episodes draws (or reads) the support sets of every shot count and seed, before anything is embedded, so that
// bad splits fail fast. Keys are k, then the seed's position in seeds.
func episodes(dataset, task, source string, train Split, shots []int, seeds []uint64, io SplitIO) (map[int][][]Support, error) {
	if len(shots) == 0 || len(seeds) == 0 {
		return nil, fmt.Errorf("%s %s: no shot counts or no seeds", dataset, task)
	}
	if err := CheckShots(train, shots); err != nil {
		return nil, fmt.Errorf("%s %s: %w", dataset, task, err)
	}
	out := map[int][][]Support{}
	for _, k := range shots {
		for _, seed := range seeds {
			sets, err := io.Support(dataset, task, source, train, k, seed)
			if err != nil {
				return nil, fmt.Errorf("%s %s %d-shot seed %d: %w", dataset, task, k, seed, err)
			}
			out[k] = append(out[k], sets)
		}
	}
	return out, nil
}

// supportEmbeddings embeds every training row used by any episode, keyed by row.
func (s *Session) supportEmbeddings(ctx context.Context, train Split, eps map[int][][]Support) (map[int][]float32, error) {
	var rows []int
	seen := map[int]bool{}
	for _, k := range slices.Sorted(maps.Keys(eps)) {
		for _, sets := range eps[k] {
			for _, set := range sets {
				for _, r := range set.Rows {
					if !seen[r] {
						seen[r] = true
						rows = append(rows, r)
					}
				}
			}
		}
	}
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = train[r].Text
	}
	vecs, err := s.embed(ctx, utterance, texts)
	if err != nil {
		return nil, err
	}
	out := make(map[int][]float32, len(rows))
	for i, r := range rows {
		out[r] = vecs[i]
	}
	return out, nil
}

// Intent runs t and returns one accuracy row per shot count.
func (s *Session) Intent(ctx context.Context, t IntentTask) (*Result, error) {
	start := time.Now()
	if s.Raw {
		return nil, fmt.Errorf("%s intent: the session keeps unnormalised embeddings (Raw), which only response selection takes", t.Dataset)
	}
	if len(t.Train) == 0 || len(t.Test) == 0 {
		return nil, fmt.Errorf("%s intent: %d training and %d test examples, want both", t.Dataset, len(t.Train), len(t.Test))
	}
	if err := CheckQueryLabels(t.Train, t.Test); err != nil {
		return nil, fmt.Errorf("%s intent: test %w", t.Dataset, err)
	}
	eps, err := episodes(t.Dataset, "intent", t.Source, t.Train, t.Shots, t.Seeds, t.Splits)
	if err != nil {
		return nil, err
	}
	sup, err := s.supportEmbeddings(ctx, t.Train, eps)
	if err != nil {
		return nil, err
	}
	queries, err := s.embed(ctx, utterance, texts(t.Test))
	if err != nil {
		return nil, err
	}
	labels := t.Train.Labels()
	gold := labelIndices(t.Test, labels)
	res := &Result{Model: s.Model, Task: "intent"}
	for _, k := range t.Shots {
		accs := make([]float64, len(t.Seeds))
		for i, sets := range eps[k] {
			pred, _, err := AssignPrototypes(similarities(queries, prototypes(labels, sets, sup, len(queries[0]))))
			if err != nil {
				return nil, err
			}
			if accs[i], err = Accuracy(pred, gold); err != nil {
				return nil, err
			}
		}
		used := UsedShots(labels, k, eps[k])
		res.Rows = append(res.Rows, newRow(s.Model, t.Dataset, "intent", fmt.Sprintf("%d-shot", k), "accuracy", t.Seeds, accs,
			map[string]any{"shots": k, "shots_used": used, "classes": len(labels), "queries": len(t.Test), "source": t.Source}))
		if note := ShortNote(t.Dataset, k, labels, used); note != "" {
			res.Notes = append(res.Notes, note)
		}
	}
	res.WallSeconds = time.Since(start).Seconds()
	return res, nil
}

// labelIndices maps each example's label to its position in labels; a label not there maps to OOS.
func labelIndices(s Split, labels []string) []int {
	pos := make(map[string]int, len(labels))
	for i, l := range labels {
		pos[l] = i
	}
	out := make([]int, len(s))
	for i, e := range s {
		if p, ok := pos[e.Label]; ok {
			out[i] = p
		} else {
			out[i] = OOS
		}
	}
	return out
}

func texts(s Split) []string {
	out := make([]string, len(s))
	for i, e := range s {
		out[i] = e.Text
	}
	return out
}
