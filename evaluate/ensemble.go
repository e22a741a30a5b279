package evaluate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"convrep/internal/ensemble"
)

// OpenMember opens one ensemble member's Session (loads its model).
type OpenMember func(ctx context.Context) (*Session, error)

// ResponseEnsemble evaluates an ensemble on t as MGT §3.2 defines it (Eq. 7): p(r_i | c) =
// (1/L) Σ_l exp(α^l_i) / Σ_j exp(α^l_j), where α^l_i is member l's score of candidate i, the score the member is
// evaluated with alone (Session.Response: the cosine of query and candidate, or for a Raw dual-encoder session
// α = cᵀr, MGT Eq. 4-5); the truth is then ranked by p
// among its candidates. All members see the same candidate lists. Members are opened one at a time, in order,
// and each is let go once it has scored, so that only one model is held at once. name is the ensemble's name in
// the outputs. This is internal/ensemble's Average over the members' softmaxes (as objectives/mgt applies it), computed here on
// embeddings that are made once per distinct text rather than per candidate slot.
func ResponseEnsemble(ctx context.Context, name string, members []OpenMember, t ResponseTask) (*Result, error) {
	start := time.Now()
	if len(members) < 2 {
		return nil, fmt.Errorf("response ensemble: %d members, want at least 2", len(members))
	}
	lists, err := t.lists()
	if err != nil {
		return nil, err
	}
	var mean [][][]float64 // [seed][query][candidate], Eq. 7's sum so far
	var names []string
	for l, open := range members {
		s, err := open(ctx)
		if err != nil {
			return nil, fmt.Errorf("ensemble member %d: %w", l+1, err)
		}
		scores, err := s.candidateScores(ctx, t.Set, lists)
		if err != nil {
			return nil, fmt.Errorf("ensemble member %d (%s): %w", l+1, s.Model, err)
		}
		names = append(names, s.Model)
		if mean == nil {
			mean = make([][][]float64, len(scores))
			for si := range scores {
				mean[si] = make([][]float64, len(scores[si]))
				for i := range scores[si] {
					mean[si][i] = make([]float64, len(scores[si][i]))
				}
			}
		}
		for si := range scores {
			for i, alpha := range scores[si] {
				for j, p := range ensemble.Softmax(alpha) {
					mean[si][i][j] += p / float64(len(members))
				}
			}
		}
	}
	res, err := t.rank(name, lists, mean)
	if err != nil {
		return nil, err
	}
	for i := range res.Rows {
		res.Rows[i].Settings["ensemble"] = names
		res.Rows[i].Settings["combination"] = "MGT Eq. 7: mean over members of the softmax over each query's candidates of the member's scores (cosine; cᵀr for a raw dual encoder)"
	}
	res.Notes = append(res.Notes, fmt.Sprintf("Ensemble of %d models (MGT §3.2, Eq. 7): each member's softmax over a query's candidates "+
		"(of the scores it is evaluated with alone: cosine, or cᵀr for a dual encoder kept raw), averaged over the members, ranks the candidates. Members: %s.",
		len(names), strings.Join(names, "; ")))
	res.WallSeconds = time.Since(start).Seconds()
	return res, nil
}
