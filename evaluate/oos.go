package evaluate

import (
	"context"
	"fmt"
	"time"
)

// OOSTask is out-of-scope detection on CLINC150 (DSE §4.2): the k-shot prototypes of the in-scope intents
// classify the in-scope test queries and the out-of-scope ones together; a query whose best similarity is
// below a threshold is called out-of-scope. The thresholds are the mean and mean−std of the queries' best
// similarities, computed, as in the paper, over the test queries themselves.
type OOSTask struct {
	Dataset string
	Source  string
	Train   Split // in-scope training rows (support sets come from here)
	Test    Split // in-scope test queries
	OOS     Split // out-of-scope test queries
	Shots   []int
	Seeds   []uint64
	Splits  SplitIO
}

// OOSNote says in every output how the thresholds were set.
const OOSNote = "Out-of-scope thresholds are the mean and mean−std of the best prototype similarities of the test queries " +
	"(in-scope and out-of-scope together), computed on the test queries themselves as the DSE paper does (§4.2): transductive, " +
	"not tuned on held-out data."

// OOS runs t and returns, per shot count and threshold, Accuracy, In-Accuracy, OOS-Accuracy and OOS-Recall.
func (s *Session) OOS(ctx context.Context, t OOSTask) (*Result, error) {
	start := time.Now()
	if len(t.Train) == 0 || len(t.Test) == 0 || len(t.OOS) == 0 {
		return nil, fmt.Errorf("%s oos: %d training, %d in-scope and %d out-of-scope test examples, want all three",
			t.Dataset, len(t.Train), len(t.Test), len(t.OOS))
	}
	if err := CheckQueryLabels(t.Train, t.Test); err != nil {
		return nil, fmt.Errorf("%s oos: in-scope test %w", t.Dataset, err)
	}
	eps, err := episodes(t.Dataset, "oos", t.Source, t.Train, t.Shots, t.Seeds, t.Splits)
	if err != nil {
		return nil, err
	}
	sup, err := s.supportEmbeddings(ctx, t.Train, eps)
	if err != nil {
		return nil, err
	}
	all := append(append(Split{}, t.Test...), t.OOS...)
	queries, err := s.embed(ctx, utterance, texts(all))
	if err != nil {
		return nil, err
	}
	labels := t.Train.Labels()
	gold := labelIndices(all, labels)
	for i := len(t.Test); i < len(gold); i++ {
		gold[i] = OOS // whatever the file calls them
	}
	res := &Result{Model: s.Model, Task: "oos", Notes: []string{OOSNote}}
	for _, k := range t.Shots {
		byThreshold := map[string]*[4][]float64{"mean": {}, "mean-std": {}}
		thresholds := map[string][]float64{}
		for _, sets := range eps[k] {
			pred, best, err := AssignPrototypes(similarities(queries, prototypes(labels, sets, sup, len(queries[0]))))
			if err != nil {
				return nil, err
			}
			mean, meanMinusStd, err := OOSThresholds(best)
			if err != nil {
				return nil, err
			}
			for name, th := range map[string]float64{"mean": mean, "mean-std": meanMinusStd} {
				m, err := OOSMetrics(pred, best, gold, th)
				if err != nil {
					return nil, err
				}
				v := byThreshold[name]
				for j, x := range []float64{m.Accuracy, m.InAccuracy, m.OOSAccuracy, m.OOSRecall} {
					v[j] = append(v[j], x)
				}
				thresholds[name] = append(thresholds[name], th)
			}
		}
		for _, name := range []string{"mean", "mean-std"} {
			settings := map[string]any{"shots": k, "threshold": name, "threshold_values": thresholds[name],
				"threshold_computed_on": "test queries (transductive, as DSE §4.2)", "in_scope_queries": len(t.Test),
				"oos_queries": len(t.OOS), "source": t.Source}
			variant := fmt.Sprintf("%d-shot, threshold=%s", k, name)
			for j, metric := range []string{"accuracy", "in_accuracy", "oos_accuracy", "oos_recall"} {
				res.Rows = append(res.Rows, newRow(s.Model, t.Dataset, "oos", variant, metric, t.Seeds, byThreshold[name][j], settings))
			}
		}
	}
	res.WallSeconds = time.Since(start).Seconds()
	return res, nil
}
