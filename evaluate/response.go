package evaluate

import (
	"context"
	"fmt"
	"time"
)

// ResponseTask is k-to-100 response selection without training (DSE §4.2, Appendix B): each query (a question,
// or a dialogue history joined into one text) is compared by cosine with its candidates, the true response and
// Size-1 responses of other queries (SampleCandidates); Top-1, Top-3, Top-10 and MRR are averaged over the
// queries and reported as mean and std over the seeds. Ties rank the truth pessimistically (Rank).
type ResponseTask struct {
	Set    *RetrievalSet
	Size   int // candidates per query; 0 = 100
	Seeds  []uint64
	Splits SplitIO
}

// Response runs t.
func (s *Session) Response(ctx context.Context, t ResponseTask) (*Result, error) {
	start := time.Now()
	lists, err := t.lists()
	if err != nil {
		return nil, err
	}
	scores, err := s.candidateScores(ctx, t.Set, lists)
	if err != nil {
		return nil, err
	}
	res, err := t.rank(s.Model, lists, scores)
	if err != nil {
		return nil, err
	}
	res.WallSeconds = time.Since(start).Seconds()
	return res, nil
}

// size is the number of candidates per query.
func (t ResponseTask) size() int {
	if t.Size == 0 {
		return 100
	}
	return t.Size
}

// lists checks t's set and returns the candidate lists of every seed (read, or drawn), before anything is embedded.
func (t ResponseTask) lists() ([][]Candidates, error) {
	set := t.Set
	if set == nil || len(set.Contexts) == 0 {
		return nil, fmt.Errorf("response selection: no queries")
	}
	if len(set.Contexts) != len(set.Responses) {
		return nil, fmt.Errorf("%s response selection: %d contexts but %d responses", set.Dataset, len(set.Contexts), len(set.Responses))
	}
	for i, c := range set.Contexts {
		if len(c) == 0 {
			return nil, fmt.Errorf("%s response selection: query %d has an empty context", set.Dataset, i)
		}
	}
	if len(t.Seeds) == 0 {
		return nil, fmt.Errorf("%s response selection: no seeds", set.Dataset)
	}
	lists := make([][]Candidates, len(t.Seeds))
	for i, seed := range t.Seeds {
		var err error
		if lists[i], err = t.Splits.candidates(set.Dataset, "response", set.Source, set.Responses, t.size(), seed); err != nil {
			return nil, fmt.Errorf("%s response selection seed %d: %w", set.Dataset, seed, err)
		}
	}
	return lists, nil
}

// candidateScores returns, per seed, query and candidate (lists' layout), the cosine similarity of the query
// and the candidate response (the dot product of the encoders' own embeddings for a Raw session).
func (s *Session) candidateScores(ctx context.Context, set *RetrievalSet, lists [][]Candidates) ([][][]float64, error) {
	queries, err := s.embedContexts(ctx, set.Contexts)
	if err != nil {
		return nil, err
	}
	responses, err := s.embed(ctx, response, set.Responses)
	if err != nil {
		return nil, err
	}
	out := make([][][]float64, len(lists))
	for si, cands := range lists {
		out[si] = make([][]float64, len(cands))
		for i, c := range cands {
			scores := make([]float64, len(c.Rows))
			for j, r := range c.Rows {
				scores[j] = dot(queries[c.Query], responses[r])
			}
			out[si][i] = scores
		}
	}
	return out, nil
}

// rank ranks each list's truth by its scores (higher is better) and returns the rows of model.
func (t ResponseTask) rank(model string, lists [][]Candidates, scores [][][]float64) (*Result, error) {
	set := t.Set
	var values [4][]float64
	for si, cands := range lists {
		ranks := make([]int, len(cands))
		for i, c := range cands {
			var err error
			if ranks[i], err = Rank(scores[si][i], c.Answer); err != nil {
				return nil, fmt.Errorf("%s response selection query %d: %w", set.Dataset, c.Query, err)
			}
		}
		m, err := RankingMetrics(ranks)
		if err != nil {
			return nil, err
		}
		for j, x := range []float64{m.Top1, m.Top3, m.Top10, m.MRR} {
			values[j] = append(values[j], x)
		}
	}
	res := &Result{Model: model, Task: "response-selection"}
	settings := map[string]any{"candidates": t.size(), "queries": len(set.Contexts), "source": set.Source}
	if set.Split != "" {
		settings["split"] = set.Split
	}
	variant := fmt.Sprintf("1 of %d", t.size())
	for j, metric := range []string{"top1", "top3", "top10", "mrr"} {
		res.Rows = append(res.Rows, newRow(model, set.Dataset, "response-selection", variant, metric, t.Seeds, values[j], settings))
	}
	return res, nil
}

// embedContexts embeds one-turn contexts as utterances and longer ones as joined histories.
func (s *Session) embedContexts(ctx context.Context, contexts [][]string) ([][]float32, error) {
	var single, multi []string
	for _, c := range contexts {
		if len(c) == 1 {
			single = append(single, c[0])
		} else {
			multi = append(multi, s.JoinHistory(c))
		}
	}
	sv, err := s.embed(ctx, utterance, single)
	if err != nil {
		return nil, err
	}
	mv, err := s.embed(ctx, history, multi)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(contexts))
	for i, c := range contexts {
		if len(c) == 1 {
			out[i], sv = sv[0], sv[1:]
		} else {
			out[i], mv = mv[0], mv[1:]
		}
	}
	return out, nil
}
