package suite

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/modelref"
)

// EnsembleMembers reads a --model and --checkpoint pair that may list several models (comma-separated) as the
// members of an ensemble (MGT §3.2, Eq. 7): several --model entries (each with its own --checkpoint entry, or
// none), or one experiment file with several --checkpoint entries (checkpoints of one run, as MGT's
// "Ensemble (5)" baseline takes the top checkpoints of a single run, §4.2). One model and at most one
// checkpoint is not an ensemble and gives one member.
func EnsembleMembers(m Model) ([]Model, error) {
	refs := splitList(m.Ref)
	ckpts := splitList(m.Checkpoint)
	var out []Model
	switch {
	case len(refs) == 0:
		return nil, modelref.Check("", "")
	case len(refs) == 1 && len(ckpts) <= 1:
		out = []Model{m}
	case len(refs) == 1:
		for _, c := range ckpts {
			one := m
			one.Ref, one.Checkpoint = refs[0], c
			out = append(out, one)
		}
	case len(ckpts) == 0 || len(ckpts) == len(refs):
		for i, r := range refs {
			one := m
			one.Ref, one.Checkpoint = r, ""
			if len(ckpts) > 0 {
				one.Checkpoint = ckpts[i]
			}
			out = append(out, one)
		}
	default:
		return nil, fmt.Errorf("--model lists %d models and --checkpoint %d checkpoints: give one checkpoint per model, or none, or one experiment file with several checkpoints", len(refs), len(ckpts))
	}
	for i, one := range out {
		if err := modelref.Check(one.Ref, one.Checkpoint); err != nil {
			if len(out) > 1 {
				return nil, fmt.Errorf("ensemble member %d: %w", i+1, err)
			}
			return nil, err
		}
	}
	return out, nil
}

// splitList splits a comma-separated flag value, dropping blanks around entries; an empty value is no entry.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// runEnsemble evaluates response Selection with an ensemble of members (evaluate.ResponseEnsemble), each
// model loaded in turn.
func runEnsemble(ctx context.Context, members []Model, quiet bool, t evaluate.ResponseTask, rename, output string, log *zap.Logger) error {
	open := make([]evaluate.OpenMember, len(members))
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = modelref.Name(m.Ref, m.Checkpoint)
		open[i] = func(ctx context.Context) (*evaluate.Session, error) {
			log.Info("ensemble member", zap.Int("member", i+1), zap.Int("of", len(members)), zap.String("model", names[i]))
			s, err := Open(ctx, m, log)
			if err != nil {
				return nil, err
			}
			if !quiet {
				s.Progress = os.Stderr
			}
			return s, nil
		}
	}
	name := fmt.Sprintf("ensemble(%d): %s", len(members), strings.Join(names, ", "))
	res, err := evaluate.ResponseEnsemble(ctx, name, open, t)
	if err != nil {
		return err
	}
	return writeResult(renamed(res, rename), output)
}

// renamed gives r's rows the model name name (--name), keeping the name it had as a note; "" leaves r as it is.
func renamed(r *evaluate.Result, name string) *evaluate.Result {
	if name == "" {
		return r
	}
	r.Notes = append(r.Notes, fmt.Sprintf("%s is %s.", name, r.Model))
	r.Model = name
	for i := range r.Rows {
		r.Rows[i].Model = name
	}
	return r
}
