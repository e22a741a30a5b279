// Package mgt is the MGT objective and its baselines (single dual encoder, ensemble).
//
// MGT: "Multi-Granularity Representations of Dialog" (Mehri and Eskenazi, EMNLP 2019), §3, on BERT backbones.
//
// A dual encoder (§3.1): the context encoder f_c is the trainer's backbone, the response encoder f_r a second
// encoder of the same configuration that starts from the backbone's weights ("two distinct encoders",
// §4.2.1). c = f_c(context), r_i = f_r(candidate i) pooled (Eq. 1-3), α_i = cᵀ r_i (Eq. 4-5), and the loss
// is Eq. 6: pick the ground truth among k candidates. The objective does not know where the negatives come
// from: the dataset (data.go, package buckets) draws them uniformly (single, ensemble; Eq. 8) or
// from segment l of the candidates ranked by cosine similarity to the ground truth under a frozen encoder
// (mgt; Eq. 9-12). One run trains one member; L runs (segment = 1..L, or member = 1..L) give the L models that
// EnsembleProbabilities combines (Eq. 7).
//
// The response encoder's parameters live in the model's VarStore under ResponsePrefix, so the trainer
// optimises (at train.lr, like the context encoder: see Groups), clips and checkpoints them with the
// backbone's. The trainer's model/ folder holds the context encoder only; LoadDualEncoder
// reads both encoders back from a run's final checkpoint.
package mgt

import (
	"fmt"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
)

// Name is the name MGT and its baselines register under (settings.variant picks the row of Table 2).
const Name = "mgt"

// ResponsePrefix is the VarStore prefix of the response encoder's parameters.
const ResponsePrefix = "mgt_response"

// Batch is B contexts with k candidates each: row i of Context is context i, rows i·k … i·k+k−1 of
// Candidates its candidates, the ground truth first.
type Batch struct {
	Context, Candidates models.Input
	K                   int64
}

// paper is what a model trained with this objective cites.
var paper = objectives.Paper{Title: "Multi-Granularity Representations of Dialog (Mehri and Eskenazi)", Venue: "EMNLP 2019"}

func init() {
	objectives.Register(Name, paper, func(s objectives.Settings) (objectives.Config, error) { return Parse(s) })
	if err := objectives.RegisterEvaluation(Name, evaluation{}); err != nil {
		panic(err)
	}
}

// Needs: MGT needs nothing beyond the encoder.
func (o Config) Needs() objectives.Requirements { return objectives.Requirements{} }

// Build adds the response encoder f_r to m's VarStore, starting from m's weights.
func (o Config) Build(m *models.Model) (objectives.Objective, error) {
	resp, err := models.NewAt(m.VS, ResponsePrefix, m.Config)
	if err != nil {
		return nil, fmt.Errorf("response encoder: %w", err)
	}
	if err := resp.CopyEncoder(m); err != nil {
		return nil, fmt.Errorf("response encoder: %w", err)
	}
	return &mgt{model: m, response: resp, settings: o}, nil
}

type mgt struct {
	model    *models.Model
	response *models.Model
	settings Config
}

func (g *mgt) Name() string { return Name }

// Groups: the context encoder f_c and the response encoder f_r are both encoders, trained at train.lr (the
// paper trains the dual encoder as one model, §4.2.1).
func (g *mgt) Groups() []objectives.Group {
	return []objectives.Group{objectives.EncoderGroup(g.model), objectives.PrefixGroup(g.model, "response_encoder", ResponsePrefix, objectives.EncoderRate)}
}

// Dataset is the contexts with their ground truth and k−1 negatives (data.go).
func (g *mgt) Dataset(env objectives.DataEnv) (objectives.Dataset, error) {
	d, _, err := buildMGTData(env, g.settings)
	return d, err
}

// Loss takes a Batch (or *Batch); metrics holds hits1, the share of contexts whose ground truth
// scores highest among its k candidates.
func (g *mgt) Loss(batch any, train bool) (loss *ts.Tensor, metrics map[string]*ts.Tensor, err error) {
	b, err := objectives.BatchAs[Batch](Name, batch)
	if err != nil {
		return nil, nil, err
	}
	de := DualEncoder{Context: g.model, Response: g.response, Pooling: g.settings.Pooling}
	err = torch.Scoped("mgt loss", func(keep torch.Keep) error {
		c, r, err := de.embed(b.Context, b.Candidates, train)
		if err != nil {
			return fmt.Errorf("mgt loss: %w", err)
		}
		l, scores, err := DualEncoderLoss(c, r, b.K)
		if err != nil {
			return fmt.Errorf("mgt loss: %w", err)
		}
		loss, metrics = keep(torch.Of(l)), map[string]*ts.Tensor{"hits1": keep(hitsAt1(torch.Of(scores)))}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return loss, metrics, nil
}

// hitsAt1 is the share of rows of scores [B,k] whose column 0 (the ground truth) is strictly the largest,
// ties counted against it (pessimistic), as a metric on the device. It panics on a libtorch error.
func hitsAt1(scores torch.Tensor) torch.Tensor {
	s := scores.Detach()
	hit := s.Select(1, 0).GtTensor(s.Narrow(1, 1, s.Size()[1]-1).Amax(1))
	return objectives.Metric(hit.Cast(gotch.Float))
}

// Embedding: the context encoder pools as the settings say and scores by dot product (Eq. 4), unnormalised.
func (g *mgt) Embedding() (models.Pooling, bool) { return g.settings.Pooling, false }
