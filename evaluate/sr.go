package evaluate

import (
	"context"
	"fmt"
	"time"
)

// SRTask is DialogueCSE's semantic retrieval (§5.1.2, Table 2's MAP and MRR): for each seed, queries drawn
// from the pool each get Size candidates retrieved by BM25 (SRLists), positive when their intent label is the
// query's; the model re-ranks a query's candidates by the cosine of its sentence embeddings with the query's
// (the embeddings of the other similarity tasks: the session's encoder, L2-normalised), and average precision
// and reciprocal rank, ties pessimistic (rankedRelevance), are averaged over the queries kept. MAP and MRR are
// reported as the mean and std over the seeds.
type SRTask struct {
	Pool     *SRPool
	Sampling SRSampling // zero fields take DefaultSRSampling's
	Seeds    []uint64
}

// sampling is t's sampling with the defaults filled in.
func (t SRTask) sampling() SRSampling {
	sp := t.Sampling
	if sp.Queries == 0 {
		sp.Queries = DefaultSRSampling.Queries
	}
	if sp.Size == 0 {
		sp.Size = DefaultSRSampling.Size
	}
	if sp.MaxPositives == 0 {
		sp.MaxPositives = DefaultSRSampling.MaxPositives
	}
	return sp
}

// SR runs t. Only the queries and the candidates of their lists are embedded, not the whole pool; with the
// defaults (3 seeds of 2,000 queries) the lists still cover nearly all of MSR-E2E's (21,171 of 21,230 texts),
// and fewer queries embed fewer texts.
func (s *Session) SR(ctx context.Context, t SRTask) (*Result, error) {
	start := time.Now()
	lists, dropped, err := t.lists(ctx, s.Raw)
	if err != nil {
		return nil, err
	}
	vecs, err := s.poolEmbeddings(ctx, t.Pool, lists)
	if err != nil {
		return nil, err
	}
	res := &Result{Model: s.Model, Task: "sr"}
	var aps, mrrs []float64
	for _, ls := range lists {
		m, r, err := srScores(ls, vecs)
		if err != nil {
			return nil, fmt.Errorf("%s semantic retrieval: %w", t.Pool.Dataset, err)
		}
		aps, mrrs = append(aps, m), append(mrrs, r)
	}
	sp := t.sampling()
	kept := make([]int, len(lists))
	positives := 0.0
	for i, ls := range lists {
		kept[i] = len(ls)
		for _, l := range ls {
			positives += float64(l.Positives()) / float64(len(ls)) / float64(len(lists))
		}
	}
	st := t.Pool.LabelStats()
	settings := map[string]any{"pool": len(t.Pool.Texts), "labels": st.Labels, "queries": sp.Queries, "queries_kept": kept,
		"queries_dropped": dropped, "candidates": sp.Size, "max_positives": sp.MaxPositives, "bm25_k1": BM25K1, "bm25_b": BM25B,
		"source": t.Pool.Source}
	variant := fmt.Sprintf("bm25-%d", sp.Size)
	res.Rows = append(res.Rows,
		newRow(s.Model, t.Pool.Dataset, "sr", variant, "map", t.Seeds, aps, settings),
		newRow(s.Model, t.Pool.Dataset, "sr", variant, "mrr", t.Seeds, mrrs, settings))
	res.Notes = t.notes(st, kept, dropped, positives)
	res.WallSeconds = time.Since(start).Seconds()
	return res, nil
}

// lists checks t and builds every seed's lists, before anything is embedded.
func (t SRTask) lists(ctx context.Context, raw bool) ([][]SRList, []int, error) {
	if t.Pool == nil || len(t.Pool.Texts) < 2 {
		return nil, nil, fmt.Errorf("semantic retrieval: the pool holds fewer than 2 texts")
	}
	if len(t.Pool.Texts) != len(t.Pool.Labels) {
		return nil, nil, fmt.Errorf("%s semantic retrieval: %d texts but %d labels", t.Pool.Dataset, len(t.Pool.Texts), len(t.Pool.Labels))
	}
	if raw {
		return nil, nil, fmt.Errorf("%s semantic retrieval: the session keeps unnormalised embeddings (Raw), which only response selection takes", t.Pool.Dataset)
	}
	if len(t.Seeds) == 0 {
		return nil, nil, fmt.Errorf("%s semantic retrieval: no seeds", t.Pool.Dataset)
	}
	index := NewBM25(t.Pool.Texts, BM25K1, BM25B)
	lists := make([][]SRList, len(t.Seeds))
	dropped := make([]int, len(t.Seeds))
	for i, seed := range t.Seeds {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		var err error
		if lists[i], dropped[i], err = SRLists(t.Pool, index, t.sampling(), seed); err != nil {
			return nil, nil, err
		}
		if len(lists[i]) == 0 {
			return nil, nil, fmt.Errorf("%s semantic retrieval seed %d: none of the %d queries has a positive among its candidates", t.Pool.Dataset, seed, dropped[i])
		}
	}
	return lists, dropped, nil
}

// poolEmbeddings embeds the pool rows that some list holds, as a query or a candidate; the others stay nil.
func (s *Session) poolEmbeddings(ctx context.Context, pool *SRPool, lists [][]SRList) ([][]float32, error) {
	var rows []int
	seen := make([]bool, len(pool.Texts))
	add := func(r int) {
		if !seen[r] {
			seen[r] = true
			rows = append(rows, r)
		}
	}
	for _, ls := range lists {
		for _, l := range ls {
			add(l.Query)
			for _, r := range l.Rows {
				add(r)
			}
		}
	}
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = pool.Texts[r]
	}
	v, err := s.embed(ctx, utterance, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(pool.Texts))
	for i, r := range rows {
		out[r] = v[i]
	}
	return out, nil
}

// srScores returns the MAP and MRR of one seed's lists, candidates scored by the dot product of the
// normalised embeddings (the cosine).
func srScores(lists []SRList, vecs [][]float32) (mapScore, mrr float64, err error) {
	for _, l := range lists {
		scores := make([]float64, len(l.Rows))
		for j, r := range l.Rows {
			scores[j] = dot(vecs[l.Query], vecs[r])
		}
		ap, err := AveragePrecision(scores, l.Positive)
		if err != nil {
			return 0, 0, fmt.Errorf("query row %d: %w", l.Query, err)
		}
		rr, err := ReciprocalRank(scores, l.Positive)
		if err != nil {
			return 0, 0, fmt.Errorf("query row %d: %w", l.Query, err)
		}
		mapScore += ap / float64(len(lists))
		mrr += rr / float64(len(lists))
	}
	return mapScore, mrr, nil
}

// notes say how the pool and the lists were made, and where this departs from the paper.
func (t SRTask) notes(st SRLabelStats, kept, dropped []int, positives float64) []string {
	p, sp := t.Pool, t.sampling()
	return []string{
		fmt.Sprintf("%s semantic retrieval (DialogueCSE §5.1.2): the pool is the %d distinct user messages of at least %d words with dialogue acts "+
			"(of %d read: %d shorter, %d without acts, %d repeats of a kept text, %d texts dropped whose copies disagree on the label). "+
			"Intent label: the act names with their slot names, values dropped (MSRIntentLabel): %d labels, %d of them with one message; the largest, %s, holds %.1f%%.",
			p.Dataset, len(p.Texts), MinSRWords, p.Messages, p.Short, p.Unlabelled, p.Repeats, p.Conflicting, st.Labels, st.Singletons, st.Largest, 100*st.Share),
		fmt.Sprintf("Per seed %d queries drawn; kept %v, dropped %v with no positive among their candidates; %.1f positives per list on average. "+
			"Candidates: the %d best by BM25 (k1 = %g, b = %g, Robertson & Zaragoza 2009), the query left out, at most %d positive (later positives passed over).",
			min(sp.Queries, len(p.Texts)), kept, dropped, positives, sp.Size, BM25K1, BM25B, sp.MaxPositives),
		"Departure from the paper: DialogueCSE discards the candidates annotators judged inconsistent with their intent label; " +
			"MSR-E2E has no such judgement, so its own act annotation is taken as it is.",
	}
}
