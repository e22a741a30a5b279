package evaluate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"convrep/objectives"
)

// ensembleObjective is the objective whose paper defines the ensemble evaluated here (MGT §3.2, Eq. 7).
const ensembleObjective = "mgt"

// OpenMember opens one ensemble member's Session (loads its model).
type OpenMember func(ctx context.Context) (*Session, error)

// ResponseEnsemble evaluates an ensemble on t as MGT §3.2 defines it (Eq. 7): p(r_i | c) =
// (1/L) Σ_l exp(α^l_i) / Σ_j exp(α^l_j), where α^l_i is member l's score of candidate i, the score the member is
// evaluated with alone (Session.Response: the cosine of query and candidate, or for a Raw dual-encoder session
// α = cᵀr, MGT Eq. 4-5); the truth is then ranked by p
// among its candidates. All members see the same candidate lists. Members are opened one at a time, in order,
// and each is let go once it has scored, so that only one model is held at once. name is the ensemble's name in
// the outputs. The combination is MGT's own (objectives.EnsembleOf, the arithmetic objectives/mgt applies to its
// tensors), here on the scores of embeddings that are made once per distinct text rather than per candidate slot.
func ResponseEnsemble(ctx context.Context, name string, members []OpenMember, t ResponseTask) (*Result, error) {
	start := time.Now()
	if len(members) < 2 {
		return nil, fmt.Errorf("response ensemble: %d members, want at least 2", len(members))
	}
	lists, err := t.lists()
	if err != nil {
		return nil, err
	}
	var per [][][][]float64 // [member][seed][query][candidate]: each member's scores α
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
		per = append(per, scores)
	}
	mean := make([][][]float64, len(per[0])) // [seed][query][candidate], Eq. 7's p
	for si := range mean {
		seed := make([][][]float64, len(per))
		for l := range per {
			seed[l] = per[l][si]
		}
		var err error
		if mean[si], err = objectives.EnsembleOf(ensembleObjective, seed); err != nil {
			return nil, err
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
