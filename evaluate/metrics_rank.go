package evaluate

import "fmt"

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
