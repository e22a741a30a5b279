package evaluate

import (
	"context"
	"fmt"
	"time"
)

// The two out-of-scope protocols of OOSTask.Protocol.
const (
	// OOSAuthors is the protocol of the DSE authors' code, which produced the published Tables 3 and 8
	// (amazon-research/dse, evaluate/run_similarity.py, eval_out_of_scope_detection): out-of-scope training
	// examples form a 151st prototype; see OOSAuthorsNote.
	OOSAuthors = "authors"
	// OOSPaper is a reading of the paper's text alone (DSE §4.2): in-scope prototypes only; see OOSNote.
	OOSPaper = "paper"
)

// OOSProtocols lists the protocols, the default first.
var OOSProtocols = []string{OOSAuthors, OOSPaper}

// OOSTask is out-of-scope detection on CLINC150 (DSE §4.2): k-shot prototypes classify the in-scope test queries
// and the out-of-scope ones together, and a query whose best similarity falls below a threshold computed over
// the test queries themselves is called out-of-scope. Protocol says which of two readings runs (OOSAuthors,
// OOSPaper); it must be set.
type OOSTask struct {
	Dataset string
	Source  string // the rows support sets are drawn from (for OOSAuthors: Train, then OOSTrain)
	Train   Split  // in-scope training rows (support sets come from here)
	Test    Split  // in-scope test queries
	OOS     Split  // out-of-scope test queries
	// OOSTrain are out-of-scope training rows, all of one label that Train lacks. OOSAuthors draws their
	// k-shot support set like any intent's and makes them the last prototype; OOSPaper does not use them.
	OOSTrain Split
	Protocol string
	Shots    []int
	Seeds    []uint64
	Splits   SplitIO
}

// OOSNote says in every output of OOSPaper how the thresholds were set.
const OOSNote = "Out-of-scope protocol \"paper\" (the DSE paper's text, §4.2): prototypes of the in-scope intents only; " +
	"thresholds are the mean and mean−std of the best prototype similarities of the test queries " +
	"(in-scope and out-of-scope together), computed on the test queries themselves: transductive, not tuned on held-out data; " +
	"a query whose best similarity is below the threshold is out-of-scope."

// OOSAuthorsNote says in every output of OOSAuthors what was done.
const OOSAuthorsNote = "Out-of-scope protocol \"authors\" (the DSE authors' code, amazon-research/dse evaluate/run_similarity.py " +
	"eval_out_of_scope_detection, which produced Tables 3 and 8): the k-shot support set includes k out-of-scope training examples " +
	"(CLINC150's data_oos_plus.json, the clinc_oos \"plus\" set the authors loaded), whose prototype is the 151st; each query's " +
	"similarities to the 151 prototypes are L2-normalised as a row before taking the maximum; thresholds are mean−std, mean and " +
	"mean+std (population std) of those maxima over the test queries; a query is out-of-scope when its maximum is not above the " +
	"threshold, else it takes the arg-max prototype (possibly the out-of-scope one). Metrics as the authors' test_oos: accuracy over " +
	"all queries, in-accuracy over the in-scope ones, oos_accuracy of the binary in/out decision, oos_recall."

// SupportRows are the rows t's support sets are drawn from: Train, then (for OOSAuthors) OOSTrain.
func (t OOSTask) SupportRows() Split {
	if t.Protocol != OOSAuthors {
		return t.Train
	}
	return append(append(Split{}, t.Train...), t.OOSTrain...)
}

// OOS runs t and returns, per shot count and threshold, Accuracy, In-Accuracy, OOS-Accuracy and OOS-Recall.
func (s *Session) OOS(ctx context.Context, t OOSTask) (*Result, error) {
	start := time.Now()
	if s.Raw {
		return nil, fmt.Errorf("%s oos: the session keeps unnormalised embeddings (Raw), which only response selection takes", t.Dataset)
	}
	if len(t.Train) == 0 || len(t.Test) == 0 || len(t.OOS) == 0 {
		return nil, fmt.Errorf("%s oos: %d training, %d in-scope and %d out-of-scope test examples, want all three",
			t.Dataset, len(t.Train), len(t.Test), len(t.OOS))
	}
	if err := CheckQueryLabels(t.Train, t.Test); err != nil {
		return nil, fmt.Errorf("%s oos: in-scope test %w", t.Dataset, err)
	}
	var res *Result
	var err error
	switch t.Protocol {
	case OOSAuthors:
		res, err = s.oosAuthors(ctx, t)
	case OOSPaper:
		res, err = s.oosPaper(ctx, t)
	default:
		return nil, fmt.Errorf("%s oos: protocol %q, want one of %v", t.Dataset, t.Protocol, OOSProtocols)
	}
	if err != nil {
		return nil, err
	}
	res.WallSeconds = time.Since(start).Seconds()
	return res, nil
}

// oosVariant names one row group: shots, threshold and protocol, so that tables laying protocols side by
// side keep them apart.
func oosVariant(k int, threshold, protocol string) string {
	return fmt.Sprintf("%d-shot, threshold=%s, %s", k, threshold, protocol)
}

var oosMetricNames = []string{"accuracy", "in_accuracy", "oos_accuracy", "oos_recall"}

func (m OOSResult) values() []float64 {
	return []float64{m.Accuracy, m.InAccuracy, m.OOSAccuracy, m.OOSRecall}
}

// oosPaper is OOSPaper: in-scope prototypes, thresholds mean and mean−std of the raw best similarities.
func (s *Session) oosPaper(ctx context.Context, t OOSTask) (*Result, error) {
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
	names := []string{"mean", "mean-std"}
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
				for j, x := range m.values() {
					v[j] = append(v[j], x)
				}
				thresholds[name] = append(thresholds[name], th)
			}
		}
		used := UsedShots(labels, k, eps[k])
		if note := ShortNote(t.Dataset, k, labels, used); note != "" {
			res.Notes = append(res.Notes, note)
		}
		for _, name := range names {
			settings := map[string]any{"shots": k, "shots_used": used, "threshold": name, "threshold_values": thresholds[name], "protocol": OOSPaper,
				"threshold_computed_on": "test queries (transductive, as DSE §4.2)", "in_scope_queries": len(t.Test),
				"oos_queries": len(t.OOS), "source": t.Source}
			for j, metric := range oosMetricNames {
				res.Rows = append(res.Rows, newRow(s.Model, t.Dataset, "oos", oosVariant(k, name, OOSPaper), metric, t.Seeds, byThreshold[name][j], settings))
			}
		}
	}
	return res, nil
}

// oosAuthors is OOSAuthors, step for step as eval_out_of_scope_detection in the authors'
// evaluate/run_similarity.py, with their evaluate/utils/test_util.py test_oos for the metrics.
func (s *Session) oosAuthors(ctx context.Context, t OOSTask) (*Result, error) {
	if len(t.OOSTrain) == 0 {
		return nil, fmt.Errorf("%s oos: protocol %q needs out-of-scope training examples (the 151st prototype), and there are none", t.Dataset, OOSAuthors)
	}
	oosLabel := t.OOSTrain[0].Label
	inScope := map[string]bool{}
	for _, e := range t.Train {
		inScope[e.Label] = true
	}
	for i, e := range t.OOSTrain {
		if e.Label != oosLabel || inScope[e.Label] {
			return nil, fmt.Errorf("%s oos: out-of-scope training row %d has label %q: want one label (%q) that no in-scope row has", t.Dataset, i, e.Label, oosLabel)
		}
	}
	// The authors' clinc150_all training file holds the out-of-scope rows as one more class (label 150, the
	// last), and the k-shot files are drawn from it as for any class (utils/data.py,
	// _generate_few_shot_data_files and _sample_few_shot_from_original_data).
	train := t.SupportRows()
	eps, err := episodes(t.Dataset, "oos-authors", t.Source, train, t.Shots, t.Seeds, t.Splits)
	if err != nil {
		return nil, err
	}
	sup, err := s.supportEmbeddings(ctx, train, eps)
	if err != nil {
		return nil, err
	}
	all := append(append(Split{}, t.Test...), t.OOS...)
	queries, err := s.embed(ctx, utterance, texts(all)) // normalize(query_embedding)
	if err != nil {
		return nil, err
	}
	labels := train.Labels() // the out-of-scope label last, as the authors' 150
	oosIdx := len(labels) - 1
	gold := labelIndices(all, labels)
	for i := len(t.Test); i < len(gold); i++ {
		gold[i] = oosIdx
	}
	res := &Result{Model: s.Model, Task: "oos", Notes: []string{OOSAuthorsNote}}
	names := []string{"mean-std", "mean", "mean+std"}
	for _, k := range t.Shots {
		var values [3][4][]float64
		var thresholds [3][]float64
		for _, sets := range eps[k] {
			protos := prototypes(labels, sets, sup, len(queries[0]))
			zeroMissing(protos) // np.zeros([hidden_size]) for a class without support
			sim := similarities(queries, protos)
			normalizeRows(sim) // sim_matrix = normalize(sim_matrix)
			argmax, maxv, err := AssignPrototypes(sim)
			if err != nil {
				return nil, err
			}
			mean, std := MeanStd(maxv) // max_values.mean(), max_values.std(): numpy's population std
			for j, th := range []float64{mean - std, mean, mean + std} {
				pred := make([]int, len(argmax))
				for i := range pred {
					pred[i] = oosIdx // preds[i] = sim.argmax() if sim.max() > cur_threshold else 150
					if maxv[i] > th {
						pred[i] = argmax[i]
					}
				}
				m, err := OOSAuthorsMetrics(pred, gold, oosIdx)
				if err != nil {
					return nil, err
				}
				for mi, x := range m.values() {
					values[j][mi] = append(values[j][mi], x)
				}
				thresholds[j] = append(thresholds[j], th)
			}
		}
		used := UsedShots(labels, k, eps[k])
		if note := ShortNote(t.Dataset, k, labels, used); note != "" {
			res.Notes = append(res.Notes, note)
		}
		for j, name := range names {
			settings := map[string]any{"shots": k, "shots_used": used, "threshold": name, "threshold_values": thresholds[j], "protocol": OOSAuthors,
				"prototypes": len(labels), "in_scope_queries": len(t.Test), "oos_queries": len(t.OOS), "source": t.Source,
				"threshold_computed_on": "row-normalised best similarities of the test queries (transductive, as the authors' code)"}
			for mi, metric := range oosMetricNames {
				res.Rows = append(res.Rows, newRow(s.Model, t.Dataset, "oos", oosVariant(k, name, OOSAuthors), metric, t.Seeds, values[j][mi], settings))
			}
		}
	}
	return res, nil
}
