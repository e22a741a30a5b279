// Package rcl is TOD-BERT's response contrastive loss.
//
// TOD-BERT: "TOD-BERT: Pre-trained Natural Language Understanding for Task-Oriented Dialogue" (Wu et al.,
// EMNLP 2020), §2.2. Each dialogue, flattened with the role tokens [USR] and [SYS], is split at a random
// system turn t into a context (the turns before t) and a response (turn t); the contexts and the
// responses of the batch are encoded separately and their [CLS] vectors (the last layer at position 0)
// compared with Loss, the other responses of the batch being the negatives. TOD-BERT-jnt adds the MLM
// loss on the masked context (the authors' code masks the context and takes its [CLS] from the same
// forward pass): L = L_mlm + L_rcl. The split and the masking are the data's (data.go), drawn
// afresh each epoch from (seed, epoch, dialogue).
//
// Settings ([objective] table): mask_prob (0.15), mlm_weight (1; 0 trains RCL alone, without masking).
package rcl

import (
	"fmt"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/inputs"
	"convrep/objectives/mlm"
	"convrep/objectives/tensors"
)

// Name is the name TOD-BERT's objective registers under.
const Name = "rcl"

// Batch is b dialogues cut into context and response. Context is masked when Labels is Defined (the
// chosen positions of Context and their tokens); Response row i is the response of context i.
type Batch struct {
	Context  models.Input
	Labels   inputs.Labels
	Response models.Input
}

// paper is what a model trained with this objective cites.
var paper = objectives.Paper{Title: "TOD-BERT: Pre-trained Natural Language Understanding for Task-Oriented Dialogue (Wu et al.)", Venue: "EMNLP 2020"}

func init() { objectives.Register(Name, paper, parseRCL) }

// Config are TOD-BERT's settings.
type Config struct {
	MaskProb  float64 // the share of context tokens masked for MLM (0.15)
	MLMWeight float64 // the MLM term's weight: 1 for TOD-BERT-jnt, 0 for RCL alone
}

func parseRCL(s objectives.Settings) (objectives.Config, error) {
	r := s.Reader()
	c := Config{MaskProb: r.Number("mask_prob", mlm.DefaultMaskProb), MLMWeight: r.Number("mlm_weight", 1)}
	if err := r.Done(); err != nil {
		return nil, err
	}
	if err := mlm.CheckMaskProb(c.MaskProb); err != nil {
		return nil, err
	}
	if c.MLMWeight < 0 {
		return nil, fmt.Errorf("setting mlm_weight = %v: must not be negative", c.MLMWeight)
	}
	return c, nil
}

// Needs: the role tokens, and the MLM head (which RCL alone leaves untrained).
func (c Config) Needs() objectives.Requirements { return mlm.Requirements }

// Build checks that m has the MLM head when the MLM term is on.
func (c Config) Build(m *models.Model) (objectives.Objective, error) {
	if c.MLMWeight > 0 {
		if err := mlm.NeedHead(m); err != nil {
			return nil, err
		}
	}
	return &rcl{model: m, cfg: c}, nil
}

type rcl struct {
	model  *models.Model
	cfg    Config
	gather objectives.Gather // nil: negatives from this process's rows only
}

// Groups: the encoder (and its MLM head) at train.lr.
func (o *rcl) Groups() []objectives.Group {
	return []objectives.Group{objectives.EncoderGroup(o.model)}
}

// Dataset is TOD-BERT's dialogues split at a system turn (data.go).
func (o *rcl) Dataset(env objectives.DataEnv) (objectives.Dataset, error) {
	return newRCLDialogues(env, o.cfg)
}

func (o *rcl) Name() string { return Name }

// SetGather makes every rank's responses negatives (GlobalBatch); the MLM term stays per rank.
func (o *rcl) SetGather(g objectives.Gather) { o.gather = g }

// Loss takes a Batch (or *Batch). metrics holds rcl and, with MLM, mlm.
func (o *rcl) Loss(batch any, train bool) (loss *ts.Tensor, metrics map[string]*ts.Tensor, err error) {
	b, err := objectives.BatchAs[Batch](Name, batch)
	if err != nil {
		return nil, nil, err
	}
	m := o.model
	if o.cfg.MLMWeight > 0 && !b.Labels.Defined() {
		return nil, nil, fmt.Errorf("rcl loss: mlm_weight is %v but the batch has no MLM labels", o.cfg.MLMWeight)
	}
	err = torch.Scoped("rcl loss", func(keep torch.Keep) error {
		ctx, err := m.Forward(b.Context, train)
		if err != nil {
			return fmt.Errorf("rcl loss: context: %w", err)
		}
		resp, err := m.Forward(b.Response, train)
		if err != nil {
			return fmt.Errorf("rcl loss: response: %w", err)
		}
		c, r := torch.Of(ctx.Last).Select(1, 0), torch.Of(resp.Last).Select(1, 0) // [CLS]
		gc, gr, err := tensors.GatherViews(o.gather, c, r)
		if err != nil {
			return err
		}
		lr, err := Loss(gc.Raw(), gr.Raw())
		if err != nil {
			return err
		}
		l := torch.Of(lr)
		metrics = map[string]*ts.Tensor{"rcl": keep(objectives.Metric(l))}
		if o.cfg.MLMWeight > 0 {
			lm, err := mlm.LossFromHidden(m, ctx.Last, b.Labels)
			if err != nil {
				return err
			}
			metrics["mlm"] = keep(objectives.Metric(torch.Of(lm)))
			l = l.Add(torch.Of(lm).MulScalar(o.cfg.MLMWeight)) // L_rcl + w·L_mlm
		}
		loss = keep(l)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return loss, metrics, nil
}

// Embedding: TOD-BERT trains and is used through its [CLS] state (§2.2, §3).
func (o *rcl) Embedding() (models.Pooling, bool) { return models.CLS, false }
