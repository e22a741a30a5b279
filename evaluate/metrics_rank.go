package evaluate

import (
	"fmt"
	"math"
	"sort"
)

// Rank returns the 1-based rank of scores[truth] among scores, pessimistically: every other candidate whose
// score is greater than or equal to the truth's (or NaN) ranks above it. A NaN truth score ranks last.
func Rank(scores []float64, truth int) (int, error) {
	if truth < 0 || truth >= len(scores) {
		return 0, fmt.Errorf("rank: true candidate %d out of range [0, %d)", truth, len(scores))
	}
	t := scores[truth]
	r := 1
	for i, s := range scores {
		if i != truth && !(s < t) {
			r++
		}
	}
	return r, nil
}

// RankingResult holds Top-1, Top-3 and Top-10 accuracy (truth ranked within the first k) and the mean
// reciprocal rank, each over all queries.
type RankingResult struct {
	Top1  float64 `json:"top1"`
	Top3  float64 `json:"top3"`
	Top10 float64 `json:"top10"`
	MRR   float64 `json:"mrr"`
}

// RankingMetrics scores queries given their 1-based ranks (see Rank).
func RankingMetrics(ranks []int) (RankingResult, error) {
	if len(ranks) == 0 {
		return RankingResult{}, fmt.Errorf("ranking metrics: no queries")
	}
	var res RankingResult
	for i, r := range ranks {
		if r < 1 {
			return RankingResult{}, fmt.Errorf("ranking metrics: query %d has rank %d, want at least 1", i, r)
		}
		if r <= 1 {
			res.Top1++
		}
		if r <= 3 {
			res.Top3++
		}
		if r <= 10 {
			res.Top10++
		}
		res.MRR += 1 / float64(r)
	}
	n := float64(len(ranks))
	res.Top1 /= n
	res.Top3 /= n
	res.Top10 /= n
	res.MRR /= n
	return res, nil
}

// rankedRelevance orders the relevance flags by their scores, highest first. Ties are broken pessimistically,
// as Rank breaks them: among equal scores the irrelevant candidates come first. A NaN score counts as the
// lowest.
func rankedRelevance(scores []float64, relevant []bool) ([]bool, error) {
	if len(scores) != len(relevant) {
		return nil, fmt.Errorf("%d scores for %d relevance flags", len(scores), len(relevant))
	}
	key := func(i int) float64 {
		if math.IsNaN(scores[i]) {
			return math.Inf(-1)
		}
		return scores[i]
	}
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ka, kb := key(order[a]), key(order[b])
		if ka != kb {
			return ka > kb
		}
		return !relevant[order[a]] && relevant[order[b]]
	})
	out := make([]bool, len(order))
	found := false
	for i, j := range order {
		out[i] = relevant[j]
		found = found || out[i]
	}
	if !found {
		return nil, fmt.Errorf("no relevant candidate among %d", len(scores))
	}
	return out, nil
}

// AveragePrecision is the precision at the rank of each relevant candidate, averaged over the relevant
// candidates of the list, candidates ordered by score (rankedRelevance): AP = (1/R) Σ_k P@k · rel(k). Its
// mean over queries is MAP, DialogueCSE §5.1.2's first metric of semantic retrieval. A list without a
// relevant candidate is an error.
func AveragePrecision(scores []float64, relevant []bool) (float64, error) {
	ranked, err := rankedRelevance(scores, relevant)
	if err != nil {
		return 0, fmt.Errorf("average precision: %w", err)
	}
	var sum float64
	hits := 0
	for k, rel := range ranked {
		if rel {
			hits++
			sum += float64(hits) / float64(k+1)
		}
	}
	return sum / float64(hits), nil
}

// ReciprocalRank is 1 over the rank of the first relevant candidate, candidates ordered by score
// (rankedRelevance); its mean over queries is the MRR of DialogueCSE §5.1.2. A list without a relevant
// candidate is an error.
func ReciprocalRank(scores []float64, relevant []bool) (float64, error) {
	ranked, err := rankedRelevance(scores, relevant)
	if err != nil {
		return 0, fmt.Errorf("reciprocal rank: %w", err)
	}
	for k, rel := range ranked {
		if rel {
			return 1 / float64(k+1), nil
		}
	}
	return 0, fmt.Errorf("reciprocal rank: no relevant candidate") // rankedRelevance has refused such a list
}
