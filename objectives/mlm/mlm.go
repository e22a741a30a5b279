// Package mlm is masked language modelling, the baseline and the MLM part of TOD-BERT, FutureTOD and DialogueCSE.
//
// Masked language modelling, BERT's pretraining task (Devlin et al. 2019, §3.1 "Task #1: Masked LM";
// Appendix A.1): a share of the input tokens is chosen (15%); of the chosen ones 80% become the mask token,
// 10% a random token and 10% stay as they were; the model predicts the original token at each chosen position
// through the MLM head, whose decoder is tied to the word embeddings. The loss is the mean cross-entropy over
// the chosen positions only. It is the "BERT-mlm" baseline here and a part of TOD-BERT's, FutureTOD's and
// DialogueCSE's losses, which call MaskTokens and Loss.
//
// As the "mlm" objective (TOD-BERT-mlm, Wu et al. 2020 §2.2) each example is a whole dialogue flattened with
// the role tokens, "[CLS] [USR] u1 [SYS] s1 ... [SEP]" (datasets.FlattenTurns), masked afresh each epoch;
// a dialogue longer than model.max_length is cut into windows that tile it (data.go). Settings ([objective]
// table): mask_prob (0.15), long_dialogues ("windows", or "truncate": one cut by model.truncation).
package mlm

import (
	"fmt"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/inputs"
	"convrep/objectives/tensors"
)

// Name is the name the masked-LM objective registers under.
const Name = "mlm"

// Batch is a masked batch: Input holds the corrupted ids [B,T], Labels the chosen positions and the
// original token at each (see MaskTokens and inputs.LabelsOf).
type Batch struct {
	Input  models.Input
	Labels inputs.Labels
}

// Requirements is what every objective with an MLM loss over flattened dialogues needs: the MLM head
// and the role tokens.
var Requirements = objectives.Requirements{Heads: models.Heads{MLM: true}, SpecialTokens: []string{"[USR]", "[SYS]"}}

// paper is what a model trained with this objective cites.
var paper = objectives.Paper{Title: "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding (Devlin et al.), masked LM over dialogues as in TOD-BERT", Venue: "NAACL 2019"}

func init() { objectives.Register(Name, paper, parseMLM) }

// DefaultMaskProb is BERT's share of chosen tokens.
const DefaultMaskProb = 0.15

// CheckMaskProb checks a mask_prob setting.
func CheckMaskProb(p float64) error {
	if !(p > 0 && p <= 1) {
		return fmt.Errorf("setting mask_prob = %v: must be in (0, 1]", p)
	}
	return nil
}

// Config are the masked-LM settings.
type Config struct {
	MaskProb      float64 // the share of chosen tokens (0.15)
	LongDialogues string  // LongWindows (the default) or LongTruncate: how a dialogue over model.max_length becomes examples
}

func parseMLM(s objectives.Settings) (objectives.Config, error) {
	r := s.Reader()
	c := Config{MaskProb: r.Number("mask_prob", DefaultMaskProb), LongDialogues: r.Text("long_dialogues", LongWindows)}
	if err := r.Done(); err != nil {
		return nil, err
	}
	if c.LongDialogues != LongWindows && c.LongDialogues != LongTruncate {
		return nil, fmt.Errorf("setting long_dialogues = %q: must be %q or %q", c.LongDialogues, LongWindows, LongTruncate)
	}
	if err := CheckMaskProb(c.MaskProb); err != nil {
		return nil, err
	}
	return c, nil
}

// Needs: the MLM head and the role tokens.
func (c Config) Needs() objectives.Requirements { return Requirements }

// Build checks that m has its MLM head.
func (c Config) Build(m *models.Model) (objectives.Objective, error) {
	if err := NeedHead(m); err != nil {
		return nil, err
	}
	return &mlm{model: m, cfg: c}, nil
}

type mlm struct {
	model *models.Model
	cfg   Config
}

func NeedHead(m *models.Model) error {
	if !m.Heads.MLM {
		return fmt.Errorf("the model has no MLM head (the trainer builds one from the objective's Requirements)")
	}
	return nil
}

// Groups: the encoder and its MLM head at train.lr.
func (o *mlm) Groups() []objectives.Group {
	return []objectives.Group{objectives.EncoderGroup(o.model)}
}

// Dataset is the flattened dialogues, a window of one per example, masked afresh each epoch (data.go).
func (o *mlm) Dataset(env objectives.DataEnv) (objectives.Dataset, error) {
	return newMLMDialogues(env, o.cfg)
}

func (o *mlm) Name() string { return Name }

// Loss takes a Batch (or *Batch) and returns the mean cross-entropy over the chosen tokens.
// metrics holds masked, the number of chosen tokens.
func (o *mlm) Loss(batch any, train bool) (loss *ts.Tensor, metrics map[string]*ts.Tensor, err error) {
	b, err := objectives.BatchAs[Batch](Name, batch)
	if err != nil {
		return nil, nil, err
	}
	err = torch.Scoped("mlm loss", func(keep torch.Keep) error {
		l, err := Loss(o.model, b.Input, b.Labels, train)
		if err != nil {
			return err
		}
		loss = keep(torch.Of(l))
		metrics = map[string]*ts.Tensor{"masked": keep(torch.Of(objectives.Known(float64(b.Labels.N), torch.Of(l).Device())))}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return loss, metrics, nil
}

// Loss runs the encoder on the masked input and returns the mean cross-entropy of the MLM head's
// predictions at the chosen positions of labels, which index masked.IDs [B,T]. Only the chosen positions
// go through the head (the vocabulary projection is the costly part). m must have an MLM head (an
// objective asks for one with Requirements). A batch without a chosen token is an error.
func Loss(m *models.Model, masked models.Input, labels inputs.Labels, train bool) (*ts.Tensor, error) {
	out, err := m.Forward(masked, train)
	if err != nil {
		return nil, fmt.Errorf("mlm loss: %w", err)
	}
	defer out.Drop()
	return LossFromHidden(m, out.Last, labels)
}

// LossFromHidden is Loss on hidden states [B,T,H] already computed (an objective that also needs the
// encoder's output for another loss runs the encoder once). The log-softmax over the vocabulary and the
// mean are in fp32 when the logits come from autocast in bf16.
func LossFromHidden(m *models.Model, hidden *ts.Tensor, labels inputs.Labels) (*ts.Tensor, error) {
	if !labels.Defined() || hidden == nil {
		return nil, fmt.Errorf("mlm loss: hidden states and labels are required")
	}
	hs, err := hidden.Size()
	if err != nil {
		return nil, fmt.Errorf("mlm loss: %w", err)
	}
	if len(hs) != 3 || hs[0] != labels.Rows || hs[1] != labels.Width {
		return nil, fmt.Errorf("mlm loss: hidden states %v do not fit labels of [%d %d]", hs, labels.Rows, labels.Width)
	}
	if labels.N == 0 {
		return nil, fmt.Errorf("mlm loss: no token of the batch was chosen for prediction")
	}
	if ps, tg := sizeOf(labels.Pos), sizeOf(labels.Target); len(ps) != 1 || ps[0] != labels.N || len(tg) != 1 || tg[0] != labels.N ||
		labels.Pos.DType() != gotch.Int64 || labels.Target.DType() != gotch.Int64 {
		return nil, fmt.Errorf("mlm loss: positions %v and targets %v must be int64 [%d]", ps, tg, labels.N)
	}
	var loss *ts.Tensor
	err = torch.Scoped("mlm loss", func(keep torch.Keep) error {
		chosen := torch.Of(hidden).View(-1, hs[2]).IndexSelect(0, torch.Of(labels.Pos))
		l, err := m.MLMLogits(chosen.Raw())
		if err != nil {
			return err
		}
		logits := torch.Of(l)
		// Mean cross-entropy: −log softmax at the original token, averaged over the chosen positions. The
		// dtype argument widens bf16 logits before the log-softmax (an explicit bf16 would keep it in bf16
		// even where autocast's policy runs log_softmax in fp32).
		loss = keep(logits.LogSoftmax(1, tensors.LossDType(logits)).NLLLoss(torch.Of(labels.Target)))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return loss, nil
}

// sizeOf is x's shape, or nil when libtorch cannot say.
func sizeOf(x *ts.Tensor) []int64 {
	s, _ := x.Size()
	return s
}

// Embedding: a masked-LM encoder is used through its [CLS] state (TOD-BERT §3, FutureTOD §3.2).
func (o *mlm) Embedding() (models.Pooling, bool) { return models.CLS, false }
