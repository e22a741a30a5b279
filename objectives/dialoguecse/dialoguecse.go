// Package dialoguecse is the DialogueCSE objective.
//
// DialogueCSE: "DialogueCSE: Dialogue-based Contrastive Learning of Sentence Embeddings" (Liu et al.,
// EMNLP 2021). A response r and its bidirectional context C (the turns around r, §3) are encoded turn by
// turn with the one shared encoder (§4.1, Eq. 1-2). The matching-guided embedding (§4.2, Eq. 3-4) refines
// r's token matrix R̄ from each context utterance's Ū; the refined matrices are aggregated over the turns
// (§4.3: I1 attention, Eq. 5-6, or I2 mean, Eq. 7) into the context-aware R̃. (R̄, R̃) is a positive pair;
// a response r′ of another dialogue refined by the same C gives the negative pair (R̄′, R̃′); NT-Xent
// (Eq. 8) with token-level mean pooling and cosine similarity trains the encoder (see cseLoss). The
// sentence embedding afterwards is the encoder's mean-pooled output (§4.4), models.Pool(models.Mean, ...),
// which is what the trainer saves the encoder for.
//
// Settings ([objective] table, Config): temperature (0.1), aggregation ("mean" = I2, the
// default, or "attention" = I1), attention_hidden (I1's FFN width, default the hidden size), negatives (9),
// context_turns (3 in all, around the response), min_turns (2), freeze_layers (6: the embeddings and the bottom six layers
// are not trained, §5.3; see Groups). I1's FFN lives in the model's VarStore under
// dialoguecse_attention and trains at train.head_lr; the encoder the trainer saves leaves it out. The paper's continued-MLM stage (§5.3) is a run of its own with the MLM objective, whose saved
// model is this run's backbone (experiments/dialoguecse_mlm_bert_base.toml).
package dialoguecse

import (
	"fmt"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/tensors"
)

// Name is the name DialogueCSE registers under.
const Name = "dialoguecse"

// Batch is B examples: example i is the response in row i of Responses with its context turns.
type Batch struct {
	Responses models.Input // [B,Tr]: r_1 … r_B
	Context   models.Input // [U,Tu]: every context utterance of the batch, one per row
	// ContextOf[i] lists the rows of Context that make C_i (at least one), in dialogue order.
	ContextOf [][]int
	// Negatives[i] lists the rows j ≠ i of Responses whose r_j, refined by C_i, is a negative pair of example i.
	Negatives [][]int
	// layout is ContextOf and Negatives as tensors on the device, made by the dataset (nil: Loss makes it).
	layout *layout
}

// paper is what a model trained with this objective cites.
var paper = objectives.Paper{Title: "DialogueCSE: Dialogue-based Contrastive Learning of Sentence Embeddings (Liu et al.)", Venue: "EMNLP 2021"}

func init() {
	objectives.Register(Name, paper, func(s objectives.Settings) (objectives.Config, error) { return Parse(s) })
}

// dialogueCSEAttention is the VarStore prefix of I1's FFN.
const dialogueCSEAttention = "dialoguecse_attention"

// Needs: DialogueCSE needs nothing beyond the encoder.
func (c Config) Needs() objectives.Requirements { return objectives.Requirements{} }

// Build adds I1's FFN to m (for aggregation = "attention").
func (c Config) Build(m *models.Model) (objectives.Objective, error) {
	if n := int(m.Config.NumLayers); c.FreezeLayers >= n {
		return nil, fmt.Errorf("setting freeze_layers = %d: the model has %d layers, at least one must train", c.FreezeLayers, n)
	}
	o := &dialogueCSE{model: m, cfg: c}
	if c.Aggregation == TurnAttention {
		h := c.AttentionHidden
		if h == 0 {
			h = m.Config.HiddenSize
		}
		var err error
		if o.att, err = newTurnAttention(m, dialogueCSEAttention, h); err != nil {
			return nil, err
		}
	}
	return o, nil
}

type dialogueCSE struct {
	model *models.Model
	cfg   Config
	att   *turnAttention // nil for I2
}

// Groups: the encoder at train.lr but for its embeddings and bottom freeze_layers layers, which are frozen
// (§5.3: "we freeze the bottom 6 layers of BERT to prevent catastrophic forgetting which simultaneously
// enables the model to be trained with larger batch size"; the embeddings go with them, since a gradient
// that reached them would flow through the frozen layers and keep their activations, the memory the paper's
// larger batch comes from); I1's FFN at train.head_lr.
func (o *dialogueCSE) Groups() []objectives.Group {
	groups := objectives.WithHead(o.model, dialogueCSEAttention)
	if o.cfg.FreezeLayers == 0 {
		return groups
	}
	trainable, frozen, err := objectives.FreezeBottom(o.model, groups[0], o.cfg.FreezeLayers)
	if err != nil { // Build checked the layer count
		panic(err)
	}
	return []objectives.Group{trainable, groups[1], frozen}
}

// Dataset is every utterance as a response with its context window (data.go).
func (o *dialogueCSE) Dataset(env objectives.DataEnv) (objectives.Dataset, error) {
	return newCSEExamples(env, o.cfg)
}

func (o *dialogueCSE) Name() string { return Name }

// Loss takes a Batch (or *Batch). metrics: pos_cos and neg_cos, the mean cosines of
// the positive and the negative pairs, and negatives, the mean number of negatives per example.
func (o *dialogueCSE) Loss(batch any, train bool) (loss *ts.Tensor, metrics map[string]*ts.Tensor, err error) {
	b, err := objectives.BatchAs[Batch](Name, batch)
	if err != nil {
		return nil, nil, err
	}
	m := o.model
	if err := b.check(); err != nil {
		return nil, nil, fmt.Errorf("dialoguecse loss: %w", err)
	}
	err = torch.Scoped("dialoguecse loss", func(keep torch.Keep) error {
		outR, err := m.Forward(b.Responses, train)
		if err != nil {
			return fmt.Errorf("dialoguecse loss: responses: %w", err)
		}
		outC, err := m.Forward(b.Context, train)
		if err != nil {
			return fmt.Errorf("dialoguecse loss: context: %w", err)
		}
		lay := b.layout
		if lay == nil {
			if lay, err = b.makeLayout(torch.Of(outC.Last).Device()); err != nil {
				return fmt.Errorf("dialoguecse loss: %w", err)
			}
		}
		// The matching-guided embeddings and the loss (§4.2-4.4) are computed in fp32 under mixed precision.
		return torch.WithoutAutocast(func() error {
			x := b.tokens(tensors.Upcast(torch.Of(outR.Last)), tensors.Upcast(torch.Of(outC.Last)), lay)
			if _, err := x.check(); err != nil {
				return err
			}
			l, sims := cseLoss(x, o.att, o.cfg.Temperature)
			loss, metrics = keep(torch.Of(l)), b.cosines(torch.Of(sims), torch.Of(x.cand), keep)
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	return loss, metrics, nil
}

// check validates the batch's shapes and its index lists.
func (b Batch) check() error {
	if b.Responses.IDs == nil || b.Context.IDs == nil || b.Responses.Mask == nil || b.Context.Mask == nil {
		return fmt.Errorf("responses and context both need ids and a mask")
	}
	rs, err1 := b.Responses.IDs.Size()
	cs, err2 := b.Context.IDs.Size()
	if err1 != nil || err2 != nil || len(rs) != 2 || len(cs) != 2 {
		return fmt.Errorf("input ids must be [rows, length], got %v and %v", rs, cs)
	}
	n, u := int(rs[0]), int(cs[0])
	if len(b.ContextOf) != n || len(b.Negatives) != n {
		return fmt.Errorf("%d responses but %d context lists and %d negative lists", n, len(b.ContextOf), len(b.Negatives))
	}
	for i := range n {
		if len(b.ContextOf[i]) == 0 {
			return fmt.Errorf("example %d has no context turn", i)
		}
		for _, k := range b.ContextOf[i] {
			if k < 0 || k >= u {
				return fmt.Errorf("example %d: context row %d outside the %d rows", i, k, u)
			}
		}
		if len(b.Negatives[i]) == 0 {
			return fmt.Errorf("example %d has no negative", i)
		}
		seen := map[int]bool{}
		for _, j := range b.Negatives[i] {
			if j < 0 || j >= n || j == i || seen[j] {
				return fmt.Errorf("example %d: negative %d is not another row of the %d responses, or repeats", i, j, n)
			}
			seen[j] = true
		}
	}
	return nil
}

// layout is what cseLoss gathers with, made from ContextOf and Negatives in Go: the dataset makes it with
// the batch (a copy from the host to a CUDA device waits for the device, so none happens in Loss), and
// Loss makes it for a Batch built by hand.
type layout struct {
	turns int64      // C, the most turns of an example
	slots *ts.Tensor // int64 [B·C]: the Context row of each turn slot, U (a zero row) for a slot without a turn
	cand  *ts.Tensor // bool [B,B]: (i,j) true when r_j under C_i is in example i's denominator
}

// makeLayout builds b's layout on dev (b must have passed check).
func (b Batch) makeLayout(dev gotch.Device) (*layout, error) {
	n, u := len(b.ContextOf), sizeOf(b.Context.IDs)[0]
	turns := 0
	for _, c := range b.ContextOf {
		turns = max(turns, len(c))
	}
	idx := make([]int64, 0, n*turns)
	cand := make([]bool, n*n)
	for i, c := range b.ContextOf {
		for k := range turns {
			if k < len(c) {
				idx = append(idx, int64(c[k]))
			} else {
				idx = append(idx, u) // the zero row tokens appends
			}
		}
		cand[i*n+i] = true
		for _, j := range b.Negatives[i] {
			cand[i*n+j] = true
		}
	}
	l := &layout{turns: int64(turns)}
	err := torch.Catch("dialoguecse layout", func() error {
		// Built on the prefetch thread while a step runs: to a GPU through pinned memory without blocking.
		l.slots = models.ToDevice(ts.MustOfSlice(idx), dev)
		l.cand = models.ToDevice(ts.MustOfSlice(cand), dev).MustView([]int64{int64(n), int64(n)}, true)
		return nil
	})
	if err != nil {
		l.drop()
		return nil, err
	}
	return l, nil
}

func (l *layout) drop() {
	if l != nil {
		torch.Drop(l.slots, l.cand)
	}
}

// tokens lays the encoder outputs out as cseLoss wants them: the context rows gathered into [B,C,Tu,d] turn
// slots (C the most turns of an example), unused slots reading an all-zero row with an all-zero mask. The
// result's cand is l's. It runs in the loss's scope and panics on a libtorch error.
func (b Batch) tokens(resp, ctx torch.Tensor, l *layout) cseTokens {
	dev, cs := ctx.Device(), ctx.Size()
	// gather lays x's rows out in the turn slots; slot U, past x's rows, reads zeros.
	gather := func(x torch.Tensor, shape ...int64) *ts.Tensor {
		zero := torch.Zeros(append([]int64{1}, x.Size()[1:]...), x.DType(), dev)
		return torch.Cat(0, x, zero).IndexSelect(0, torch.Of(l.slots)).View(shape...).Raw()
	}
	nb := int64(len(b.ContextOf))
	return cseTokens{
		resp:     resp.Raw(),
		respMask: torch.Of(b.Responses.Mask).To(dev).Raw(),
		ctx:      gather(ctx, nb, l.turns, cs[1], cs[2]),
		ctxMask:  gather(torch.Of(b.Context.Mask), nb, l.turns, cs[1]),
		cand:     l.cand,
	}
}

// cosines are the metrics of the similarities sims [B,B] (detached), on the device, handed out with keep:
// pos_cos and neg_cos, the mean similarity of the positive and of the negative pairs, and negatives, the
// mean number of negatives per example (known in Go). cand marks each example's positive (the diagonal)
// and its negatives. It panics on a libtorch error.
func (b Batch) cosines(sims, cand torch.Tensor, keep torch.Keep) map[string]*ts.Tensor {
	n, negs := len(b.ContextOf), 0
	for _, ng := range b.Negatives {
		negs += len(ng)
	}
	dev := sims.Device()
	neg := cand.Cast(sims.DType()).MaskedFill(torch.Eye(int64(n), gotch.Bool, dev), 0) // 1 at the negatives
	return map[string]*ts.Tensor{
		"pos_cos":   keep(objectives.Metric(sims.Diagonal(0, 0, 1))),
		"neg_cos":   keep(sims.Mul(neg).Sum(gotch.Float).DivScalar(float64(negs))),
		"negatives": keep(torch.Of(objectives.Known(float64(negs)/float64(n), dev))),
	}
}

// Embedding: the encoder's mean-pooled output (§4.4), compared by cosine.
func (o *dialogueCSE) Embedding() (models.Pooling, bool) { return models.Mean, true }
