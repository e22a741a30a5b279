// Package dse is the DSE objective.
//
// DSE: "Learning Dialogue Representations from Consecutive Utterances" (Zhou et al., NAACL 2022).
// Consecutive utterances (x_i, x_i+) of a dialogue are positive pairs (§2, §3.1); each is embedded by mean
// pooling over the encoder's last layer (§3.1), passed through a contrastive head, a two-layer MLP
// Linear(d,d) → ReLU → Linear(d,128) without biases (Appendix A.2), L2-normalised, and trained with the
// hard-negative contrastive loss of Eq. 1-3 (see HardConLoss). Its pairs (and SimCSE's, the dropout
// construction) are built here (DSEPairs, PairBuilder: §3.1, §4.4, Appendix A.1), their k-1 queries fitted
// to their budget (QueryCut), and kept in datasets' token cache (NewPairs).
//
// Settings ([objective] table): temperature τ (default 0.05, Appendix A.2), mode ("hardneg", the default,
// or "orig"), head_dim (128), head_init and query_cut. The head's parameters live in the model's VarStore
// under contrast_head.0 and contrast_head.2 (the indices of DSE's nn.Sequential), in a group of their own
// trained at train.head_lr (Appendix A.2: 3e-4 for the head, 3e-6 for the encoder). The model the trainer
// saves is the encoder's own parameters, without the head, as in DSE.
//
// Where the paper leaves a choice open, the defaults are what the authors' code (amazon-research/dse,
// pretrain/) does, and the other reading stays a setting:
//   - head_init "normal": the head drawn N(0, initializer_range), 0.02 for the paper's backbones, as
//     from_pretrained initialises it (models/Transformers.py, PSCBert; transformers' _init_weights);
//     "uniform" is torch.nn.Linear's U(±1/√d) (HeadInit).
//   - query_cut "words": a k-1 query keeps its last int(0.9·k·max_length) words and the tokenizer then
//     cuts its end (training.py, prepare_pairwise_input_multiturn_concatenate); "tokens_left" cuts tokens
//     from the left so the utterance next to the response stays (QueryCut).
//   - train.head_lr, when the experiment leaves it out, is train.lr × 100 (main.py's --lr_scale default,
//     utils/optimizer.py get_optimizer), and each epoch's last partial batch is kept (dataloader.py: torch's
//     DataLoader, drop_last=False) unless train.drop_last says otherwise (TrainDefaults). The loss of a
//     smaller batch is Eq. 3 over its own B' ≥ 2 pairs: each anchor's negatives are the other 2B'−2 views,
//     the mean is over its 2B' anchors, so its scale is that of any batch (log(2B'−1) at chance) and the
//     step weighs it as a full one. The trainer leaves out a last batch of fewer than 2 pairs (no negative;
//     the authors' HardNeg loss is NaN there, a mean over no negatives).
package dse

import (
	"fmt"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/tensors"
)

// Name is the name DSE registers under.
const Name = "dse"

// Batch is B pairs of consecutive utterances: row i of Query is x_i and row i of Response is x_i+.
type Batch struct {
	Query, Response models.Input
	// PairSimi optionally marks which pairs are positive (int64 [B], 1 = positive); nil means all.
	// Pairs not marked still serve as negatives.
	PairSimi *ts.Tensor
}

// Tensors lists the batch's tensors for CUDA graphs (objectives.Static): both views' ids, masks and token
// types, then PairSimi when it is set.
func (b Batch) Tensors() []*ts.Tensor {
	out := []*ts.Tensor{b.Query.IDs, b.Query.Mask, b.Query.TypeIDs, b.Response.IDs, b.Response.Mask, b.Response.TypeIDs}
	if b.PairSimi != nil {
		out = append(out, b.PairSimi)
	}
	return out
}

var _ objectives.Static = Batch{}

// paper is what a model trained with this objective cites.
var paper = objectives.Paper{Title: "Learning Dialogue Representations from Consecutive Utterances (Zhou et al.)", Venue: "NAACL 2022"}

// A refused registration is reported by Parse, so the error needs no handling here.
func init() {
	objectives.Register(Name, paper, parseDSE)
	if err := objectives.RegisterEvaluation(Name, evaluation{}); err != nil {
		panic(err)
	}
}

// Config are DSE's settings.
type Config struct {
	Temperature float64  // τ (Appendix A.2: 0.05)
	Mode        Mode     // hardneg (Eq. 1-3) or orig
	HeadDim     int64    // the head's output size (Appendix A.2: 128)
	HeadInit    HeadInit // how the head is drawn (normal, as the authors' code)
	QueryCut    QueryCut // how a k-1 query meets its budget (words, as the authors' code)
}

// HeadLRScale is DSE's lr_scale: the head trains at lr × 100 unless train.head_lr says otherwise
// (pretrain/main.py, --lr_scale default 100; pretrain/utils/optimizer.py, get_optimizer). Appendix A.2's
// rates, 3e-4 and 3e-6, are the same ratio.
const HeadLRScale = 100

func parseDSE(s objectives.Settings) (objectives.Config, error) {
	r := s.Reader()
	c := Config{Temperature: r.Number("temperature", 0.05), HeadDim: r.Integer("head_dim", 128)}
	modeName := r.Text("mode", string(HardNeg))
	initName := r.Text("head_init", string(HeadInitNormal))
	cutName := r.Text("query_cut", string(QueryCutWords))
	if err := r.Done(); err != nil {
		return nil, err
	}
	var err error
	if c.Mode, err = ParseMode(modeName); err != nil {
		return nil, fmt.Errorf("setting mode: %w", err)
	}
	if c.HeadInit, err = ParseHeadInit(initName); err != nil {
		return nil, fmt.Errorf("setting head_init: %w", err)
	}
	if c.QueryCut, err = ParseQueryCut(cutName); err != nil {
		return nil, fmt.Errorf("setting query_cut: %w", err)
	}
	if err := CheckContrast(c.Temperature, c.Mode); err != nil {
		return nil, fmt.Errorf("setting temperature: %w", err)
	}
	if c.HeadDim <= 0 {
		return nil, fmt.Errorf("setting head_dim = %d: must be positive", c.HeadDim)
	}
	return c, nil
}

// TrainDefaults: the authors' head rate (lr × HeadLRScale) and their loader's last partial batch.
func (c Config) TrainDefaults() objectives.TrainDefaults {
	return objectives.TrainDefaults{HeadLRScale: HeadLRScale, KeepLastBatch: true}
}

// Needs: DSE needs nothing beyond the encoder.
func (c Config) Needs() objectives.Requirements { return objectives.Requirements{} }

// Build adds the contrastive head to m.
func (c Config) Build(m *models.Model) (objectives.Objective, error) {
	head, err := newContrastHead(m, dseHead, c.HeadDim, c.HeadInit)
	if err != nil {
		return nil, err
	}
	return &dse{model: m, head: head, tau: c.Temperature, mode: c.Mode, cut: c.QueryCut}, nil
}

// dseHead is the VarStore prefix of DSE's contrastive head.
const dseHead = "contrast_head"

type dse struct {
	model  *models.Model
	head   *contrastHead
	tau    float64
	mode   Mode
	cut    QueryCut
	gather objectives.Gather // nil: negatives from this process's rows only
}

// SetGather makes the loss contrast against every rank's pairs (GlobalBatch).
func (d *dse) SetGather(g objectives.Gather) { d.gather = g }

// Groups: the encoder at train.lr, the head at train.head_lr (Appendix A.2).
func (d *dse) Groups() []objectives.Group { return objectives.WithHead(d.model, dseHead) }

// Dataset is the consecutive-utterance pairs of data.pairs (§3.1; dse2-1, dse3-1, dse123-1 for §4.4).
func (d *dse) Dataset(env objectives.DataEnv) (objectives.Dataset, error) {
	return NewPairs(env, env.Pairs, d.cut)
}

func (d *dse) Name() string { return Name }

// Loss takes a Batch (or *Batch). metrics holds pos_cos, the mean cosine of the positive pairs in
// the head's space.
func (d *dse) Loss(batch any, train bool) (loss *ts.Tensor, metrics map[string]*ts.Tensor, err error) {
	b, err := objectives.BatchAs[Batch](Name, batch)
	if err != nil {
		return nil, nil, err
	}
	n, err := PairRows(b)
	if err != nil {
		return nil, nil, fmt.Errorf("dse loss: %w", err)
	}
	err = torch.Scoped("dse loss", func(keep torch.Keep) error {
		e, err := EmbedPairs(d.model, b.Query, b.Response, train) // [2B,d]: e_i then e_i+
		if err != nil {
			return fmt.Errorf("dse loss: %w", err)
		}
		// The head runs under autocast like the encoder; the normalisation and the loss run in fp32.
		z := tensors.Upcast(torch.Of(d.head.forward(e.Raw())))
		return torch.WithoutAutocast(func() error {
			u := tensors.Unit(z) // unit vectors, as DSE normalises the head outputs
			all, rows, marks, err := tensors.GatherPairs(d.gather, u, n, torch.Of(b.PairSimi))
			if err != nil {
				return err
			}
			l, pos := contrast(all, rows, marks, d.tau, d.mode)
			// pos holds s(e_i, e_i+)/τ: the mean cosine is its mean times τ.
			loss, metrics = keep(l), map[string]*ts.Tensor{"pos_cos": keep(objectives.Metric(pos).MulScalar(d.tau))}
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	return loss, metrics, nil
}

// PairRows checks that both views hold the same number B ≥ 2 of rows and returns B.
func PairRows(b Batch) (int64, error) {
	if b.Query.IDs == nil || b.Response.IDs == nil {
		return 0, fmt.Errorf("both the query and the response view are required")
	}
	q, err1 := b.Query.IDs.Size()
	r, err2 := b.Response.IDs.Size()
	if err1 != nil || err2 != nil || len(q) != 2 || len(r) != 2 {
		return 0, fmt.Errorf("input ids must be [batch, length], got %v and %v", q, r)
	}
	if q[0] != r[0] {
		return 0, fmt.Errorf("%d queries but %d responses", q[0], r[0])
	}
	if q[0] < 2 {
		return 0, fmt.Errorf("a batch of %d pairs has no negatives (need at least 2)", q[0])
	}
	if b.PairSimi != nil {
		if s, err := b.PairSimi.Size(); err != nil || len(s) != 1 || s[0] != q[0] {
			return 0, fmt.Errorf("pairsimi must be [%d], got %v", q[0], s)
		}
	}
	return q[0], nil
}

// EmbedPairs mean-pools both views (§3.1) into one [2B,d] tensor. Views Padded to the same length run
// through the encoder as one batch (half the ops); otherwise each runs on its own. It runs inside a scope
// (torch.Scoped), which frees what it makes, and panics on a libtorch error.
func EmbedPairs(m *models.Model, q, r models.Input, train bool) (torch.Tensor, error) {
	if torch.Of(q.IDs).Size()[1] == torch.Of(r.IDs).Size()[1] && (q.TypeIDs == nil) == (r.TypeIDs == nil) {
		return MeanEmbedding(m, StackViews(q, r), train)
	}
	eq, err := MeanEmbedding(m, q, train)
	if err != nil {
		return eq, fmt.Errorf("query view: %w", err)
	}
	er, err := MeanEmbedding(m, r, train)
	if err != nil {
		return er, fmt.Errorf("response view: %w", err)
	}
	return torch.Cat(0, eq, er), nil
}

// StackViews is one input holding q's rows over r's, for views of the same width. A mask or token types
// that one view lacks are left out. It panics on a libtorch error.
func StackViews(q, r models.Input) models.Input {
	return models.Input{IDs: catRows(q.IDs, r.IDs), Mask: catRows(q.Mask, r.Mask), TypeIDs: catRows(q.TypeIDs, r.TypeIDs),
		Unpadded: q.Unpadded && r.Unpadded}
}

// catRows stacks a's rows over b's, or is nil when either is.
func catRows(a, b *ts.Tensor) *ts.Tensor {
	if a == nil || b == nil {
		return nil
	}
	return torch.Cat(0, torch.Of(a), torch.Of(b)).Raw()
}

// MeanEmbedding is the mean of the encoder's last layer over in's real tokens. Its hidden states are freed
// as soon as they are pooled.
func MeanEmbedding(m *models.Model, in models.Input, train bool) (torch.Tensor, error) {
	out, err := m.Forward(in, train)
	if err != nil {
		return torch.Tensor{}, err
	}
	defer out.Drop()
	e, err := models.Pool(models.Mean, out.Last, in.Mask)
	return torch.Of(e), err
}

// Embedding: the mean of the last layer (§3.1), compared by cosine (§4.2).
func (d *dse) Embedding() (models.Pooling, bool) { return models.Mean, true }
