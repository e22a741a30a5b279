// Package simcse is the SimCSE-dropout baseline.
//
// SimCSE-dropout: "SimCSE: Simple Contrastive Learning of Sentence Embeddings" (Gao et al., EMNLP 2021),
// unsupervised. Each utterance is encoded twice; the two encodings differ only by the encoder's dropout
// masks (§3) and form a positive pair, the other utterances of the batch being the negatives, with the loss
// of Loss (Eq. 4, τ = 0.05). The data are DSE's "dropout" pairs, every distinct utterance paired with
// itself (dse.VariantDropout).
//
// Settings ([objective] table): temperature (0.05), pooler: "cls" (the default: the [CLS] vector through
// an MLP, Linear(d,d) then tanh, during training only, §3 and Appendix A of the paper: "we take [CLS]
// representation with an MLP layer on top of it" and drop the MLP at test time), "cls_before_pooler"
// ([CLS] without MLP) or "avg" (mean of the last layer). The MLP's parameters live under simcse_mlp.dense
// in a group trained at train.head_lr and are not part of the saved encoder.
package simcse

import (
	"fmt"
	"math"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/dse"
	"convrep/objectives/tensors"
)

// Name is the name SimCSE registers under.
const Name = "simcse"

// paper is what a model trained with this objective cites.
var paper = objectives.Paper{Title: "SimCSE: Simple Contrastive Learning of Sentence Embeddings (Gao et al.), unsupervised", Venue: "EMNLP 2021"}

func init() { objectives.Register(Name, paper, parseSimCSE) }

// Config are SimCSE's settings.
type Config struct {
	Temperature float64 // τ (0.05)
	Pooler      string  // cls, cls_before_pooler or avg
}

func parseSimCSE(s objectives.Settings) (objectives.Config, error) {
	r := s.Reader()
	c := Config{Temperature: r.Number("temperature", 0.05), Pooler: r.Text("pooler", "cls")}
	if err := r.Done(); err != nil {
		return nil, err
	}
	if err := dse.CheckContrast(c.Temperature, dse.Orig); err != nil {
		return nil, fmt.Errorf("setting temperature: %w", err)
	}
	switch c.Pooler {
	case "cls", "cls_before_pooler", "avg":
	default:
		return nil, fmt.Errorf("setting pooler = %q: want cls, cls_before_pooler or avg", c.Pooler)
	}
	return c, nil
}

// Needs: SimCSE needs nothing beyond the encoder.
func (c Config) Needs() objectives.Requirements { return objectives.Requirements{} }

// Build adds the MLP of the cls pooler to m.
func (c Config) Build(m *models.Model) (objectives.Objective, error) {
	o := &simcse{model: m, tau: c.Temperature, pooler: c.Pooler}
	if c.Pooler == "cls" {
		if err := o.buildMLP(); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// simcseMLP is the VarStore prefix of SimCSE's MLP.
const simcseMLP = "simcse_mlp"

type simcse struct {
	model  *models.Model
	tau    float64
	pooler string
	w, b   *ts.Tensor        // the MLP's Linear(d,d); nil unless pooler is "cls"
	gather objectives.Gather // nil: negatives from this process's rows only
}

// Groups: the encoder at train.lr, the MLP (when there is one) at train.head_lr.
func (o *simcse) Groups() []objectives.Group { return objectives.WithHead(o.model, simcseMLP) }

// Dataset is every distinct utterance paired with itself, DSE's "dropout" pairs (the same data path and
// cache). data.pairs must be "dropout" or left out.
func (o *simcse) Dataset(env objectives.DataEnv) (objectives.Dataset, error) {
	switch env.Pairs {
	case dse.VariantDropout, dse.VariantDSE: // "dse" is the default of a file that names none
		return dse.NewPairs(env, dse.VariantDropout, "")
	}
	return nil, fmt.Errorf("data.pairs = %q: simcse trains on %q pairs (one utterance twice)", env.Pairs, dse.VariantDropout)
}

// buildMLP adds SimCSE's MLPLayer, torch.nn.Linear(d,d) with its default initialisation, to the model.
func (o *simcse) buildMLP() error {
	if _, err := o.model.VS.Root().Get(simcseMLP + ".dense.weight"); err == nil {
		return fmt.Errorf("the model already has a simcse_mlp")
	}
	d := o.model.Config.HiddenSize
	return torch.Catch("build the simcse_mlp", func() error {
		p := o.model.VS.Root().Sub(simcseMLP)
		init := tensors.Uniform{Bound: 1 / math.Sqrt(float64(d))}
		o.w = p.Sub("dense").MustNewVar("weight", []int64{d, d}, init)
		o.b = p.Sub("dense").MustNewVar("bias", []int64{d}, init)
		return nil
	})
}

func (o *simcse) Name() string { return Name }

// SetGather makes every rank's utterances negatives (GlobalBatch).
func (o *simcse) SetGather(g objectives.Gather) { o.gather = g }

// Loss takes a dse.Batch whose two views hold the same utterances (or *dse.Batch); PairSimi is ignored.
// metrics holds pos_cos, the mean cosine of the two views of an utterance.
func (o *simcse) Loss(batch any, train bool) (loss *ts.Tensor, metrics map[string]*ts.Tensor, err error) {
	b, err := objectives.BatchAs[dse.Batch](Name, batch)
	if err != nil {
		return nil, nil, err
	}
	n, err := dse.PairRows(dse.Batch{Query: b.Query, Response: b.Response})
	if err != nil {
		return nil, nil, fmt.Errorf("simcse loss: %w", err)
	}
	err = torch.Scoped("simcse loss", func(keep torch.Keep) error {
		// Both views in one batch: every row gets its own dropout masks, as the paper's code does by
		// repeating each sentence twice within one forward pass.
		e, err := o.embed(o.model, b.Query, b.Response, train)
		if err != nil {
			return fmt.Errorf("simcse loss: %w", err)
		}
		h1, h2 := e.Narrow(0, 0, n), e.Narrow(0, n, n)
		g1, g2, err := tensors.GatherViews(o.gather, h1, h2)
		if err != nil {
			return err
		}
		l, err := Loss(g1.Raw(), g2.Raw(), o.tau)
		if err != nil {
			return err
		}
		loss = keep(torch.Of(l))
		return torch.WithoutAutocast(func() error {
			cos := torch.CosineSimilarity(tensors.Upcast(h1), tensors.Upcast(h2), 1, 1e-8)
			metrics = map[string]*ts.Tensor{"pos_cos": keep(objectives.Metric(cos))}
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	return loss, metrics, nil
}

// embed pools the two views into one [2N,d] tensor with the configured pooler. It runs inside the loss's
// scope and panics on a libtorch error.
func (o *simcse) embed(m *models.Model, q, r models.Input, train bool) (torch.Tensor, error) {
	if o.pooler == "avg" {
		return dse.EmbedPairs(m, q, r, train)
	}
	if qs, rs := torch.Of(q.IDs).Size(), torch.Of(r.IDs).Size(); qs[1] != rs[1] {
		return torch.Tensor{}, fmt.Errorf("the two views must have the same width (the same utterances), got %v and %v", qs, rs)
	}
	out, err := m.Forward(dse.StackViews(q, r), train)
	if err != nil {
		return torch.Tensor{}, err
	}
	defer out.Drop() // the hidden states, once the [CLS] row is taken
	cls := torch.Of(out.Last).Select(1, 0)
	if o.w == nil {
		return cls, nil
	}
	return torch.Linear(cls, torch.Of(o.w), torch.Of(o.b)).Tanh(), nil
}

// Embedding: the [CLS] state for the cls poolers (the MLP is dropped at test time, §3), the mean for avg;
// compared by cosine.
func (o *simcse) Embedding() (models.Pooling, bool) {
	if o.pooler == "avg" {
		return models.Mean, true
	}
	return models.CLS, true
}
