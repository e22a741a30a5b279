package evaluate

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// An Ensemble is how the members' scores of a query's candidates make one score per candidate: MGT §3.2's
// Eq. 7, as the objective that trains such members defines it (objectives.Evaluation's Ensemble), is the one
// evaluate response uses.
type Ensemble struct {
	// Combine maps the members' scores, [member][query][candidate], to one score per candidate, [query][candidate].
	Combine func(scores [][][]float64) ([][]float64, error)
	Setting string // the combination in a few words, recorded in the rows' settings
	Note    string // the combination for the result's notes, after "Ensemble of N models"
}

// OpenMember opens one ensemble member's Session (loads its model).
type OpenMember func(ctx context.Context) (*Session, error)

// ResponseEnsemble evaluates an ensemble on t: each member's score α^l_i of candidate i is the score the
// member is evaluated with alone (Session.Response: the cosine of query and candidate, or for a Raw
// dual-encoder session α = cᵀr, MGT Eq. 4-5), e combines the members' scores (MGT Eq. 7: p(r_i | c) =
// (1/L) Σ_l exp(α^l_i) / Σ_j exp(α^l_j)), and the truth is ranked by the combined score among its candidates.
// All members see the same candidate lists. Members are opened one at a time, in order, and each is let go
// once it has scored, so that only one model is held at once; embeddings are made once per distinct text
// rather than per candidate slot. name is the ensemble's name in the outputs.
func ResponseEnsemble(ctx context.Context, name string, members []OpenMember, t ResponseTask, e Ensemble) (*Result, error) {
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
	mean := make([][][]float64, len(per[0])) // [seed][query][candidate], the combined scores
	for si := range mean {
		seed := make([][][]float64, len(per))
		for l := range per {
			seed[l] = per[l][si]
		}
		var err error
		if mean[si], err = e.Combine(seed); err != nil {
			return nil, err
		}
	}
	res, err := t.rank(name, lists, mean)
	if err != nil {
		return nil, err
	}
	for i := range res.Rows {
		res.Rows[i].Settings["ensemble"] = names
		res.Rows[i].Settings["combination"] = e.Setting
	}
	res.Notes = append(res.Notes, fmt.Sprintf("Ensemble of %d models %s. Members: %s.", len(names), e.Note, strings.Join(names, "; ")))
	res.WallSeconds = time.Since(start).Seconds()
	return res, nil
}
