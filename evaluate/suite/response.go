package suite

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/modelref"
	"convrep/objectives"
)

func init() {
	Register(Task{Name: "response", Section: Similarity,
		Summary:  "k-to-100 response selection (AmazonQA, Ubuntu IRC, MultiWOZ, or a --test file)",
		Synopsis: "--model M (--dataset amazonqa|ubuntu|multiwoz | --test F) [flags]",
		About: "Response selection without training (DSE §4.2): each query (a question, or a dialogue history joined with the\n" +
			"separator token and truncated from the head) ranks its true response among --candidates by cosine similarity.\n" +
			"Top-1, Top-3, Top-10, MRR; ties rank the truth last among equals. An ensemble (MGT §3.2, Eq. 7): --model a,b,c\n" +
			"(with --checkpoint x,y,z paired, or none), or --model exp.toml --checkpoint x,y,z (checkpoints of one run); each\n" +
			"member's softmax over a query's candidates of its scores, averaged over the members, ranks the candidates. An MGT\n" +
			"dual encoder (a run folder of objective mgt, or its experiment with --checkpoint) embeds candidates with its\n" +
			"response encoder and scores them by the dot product cᵀr (MGT Eq. 4) instead of the cosine.",
		Data: "AmazonQA (amazonqa/), Ubuntu IRC (ubuntu_irc/) or MultiWOZ 2.1 (multiwoz21/) under --data-root, or a --test file of queries and responses",
		New:  func() Options { return new(ResponseOptions) }})
}

// ResponseOptions are evaluate response's settings.
type ResponseOptions struct {
	Common
	Candidates int    // candidates per query, the true response included
	Name       string // the model's name in the rows ("": --model, or the ensemble's members)
}

// Flags declares evaluate response's flags.
func (o *ResponseOptions) Flags(f *Flags) {
	o.flags(f, 128) // DSE App. B.1: 128 for response selection
	o.headFlag(f)
	f.IntVar(&o.Candidates, "candidates", 100, "candidates per query, the true response included")
	f.StringVar(&o.Name, "name", "", "the model's name in the result rows and tables (default: --model, or the ensemble's members)")
	f.Uint64Var(&o.Data.SplitSeed, "split-seed", 1, "seed choosing each Ubuntu IRC conversation's split point (the test set itself)")
	f.StringVar(&o.Data.Split, "split", "test", "the dataset's split: test, or val (MultiWOZ 2.1's validation dialogues, for choosing checkpoints: see evaluate select); recorded in the rows")
}

// Run runs response selection, by one model or an ensemble, and writes the result.
func (o *ResponseOptions) Run(ctx context.Context, log *zap.Logger) error {
	c, size, name := &o.Common, o.Candidates, o.Name
	if err := c.Data.checkSplit(); err != nil {
		return err
	}
	if c.Data.Test != "" && c.Data.Split != "test" {
		return fmt.Errorf("--split %s goes with --dataset multiwoz; a --test file is read as it is", c.Data.Split)
	}
	c.Model.Dual = true // an MGT dual encoder scores by cᵀr with both its encoders (Eq. 4)
	members, err := EnsembleMembers(c.Model)
	if err != nil {
		return err
	}
	first := *c
	first.Model = members[0] // prepare checks one member; EnsembleMembers checked them all
	p, err := prepare(&first)
	if err != nil {
		return err
	}
	set, err := c.Data.responseData()
	if err != nil {
		return err
	}
	if len(set.Responses) < size {
		return fmt.Errorf("%s: %d responses, fewer than --candidates %d", set.Dataset, len(set.Responses), size)
	}
	task := evaluate.ResponseTask{Set: set, Size: size, Seeds: p.seeds, Splits: c.splitIO()}
	if len(members) > 1 {
		return runEnsemble(ctx, members, c.Quiet, task, name, c.Output, log)
	}
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	res, err := s.Response(ctx, task)
	if err != nil {
		return err
	}
	return writeResult(renamed(res, name), c.Output)
}

// The ensemble of evaluate response is MGT's (§3.2, Eq. 7): the response task is its one home here, and the
// arithmetic is the objective's own, reached through objectives.Evaluation (objectives.EnsembleOf); MGT's
// "Ensemble (5)" baseline of a single run's top checkpoints (§4.2) is evaluate select's choice fed to it.

// ensemblePaper is the objective whose paper defines the ensemble evaluated here.
const ensemblePaper = "mgt"

// mgtEnsemble combines the members' scores as MGT's Eq. 7.
var mgtEnsemble = evaluate.Ensemble{
	Combine: func(scores [][][]float64) ([][]float64, error) { return objectives.EnsembleOf(ensemblePaper, scores) },
	Setting: "MGT Eq. 7: mean over members of the softmax over each query's candidates of the member's scores (cosine; cᵀr for a raw dual encoder)",
	Note: "(MGT §3.2, Eq. 7): each member's softmax over a query's candidates " +
		"(of the scores it is evaluated with alone: cosine, or cᵀr for a dual encoder kept raw), averaged over the members, ranks the candidates",
}

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

// runEnsemble evaluates response Selection with an ensemble of members (evaluate.ResponseEnsemble), each
// model loaded in turn, their scores combined as MGT's objective defines its ensemble (mgtEnsemble).
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
	res, err := evaluate.ResponseEnsemble(ctx, name, open, t, mgtEnsemble)
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
