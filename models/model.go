package models

import (
	"fmt"
	"runtime"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// Heads says which parts beside the encoder a Model has.
type Heads struct {
	Pooler bool // BERT's pooler: tanh(dense(h_CLS))
	MLM    bool // the masked-language-model head, decoder tied to the word embeddings
	NSP    bool // BERT's next-sentence head (BertForPreTraining)
}

// Model is an encoder of one of the three families with its optional heads. Its parameters live in VS
// under HuggingFace's names for the head model (bert.embeddings.word_embeddings.weight, cls.predictions.bias, ...).
type Model struct {
	Config *Config
	Heads  Heads
	VS     *nn.VarStore

	emb        *embeddings
	layers     []*block
	pooler     *linear
	mlm        *mlmHead
	nsp        *linear
	params     map[string]*ts.Tensor
	packed     []packedBlock // the layers' weights in oneDNN's layout, for CPU inference (PackForCPUInference)
	packedBF16 bool          // packed holds them in bfloat16
}

// New builds a randomly initialised model (HuggingFace's initialisation; seed libtorch first with
// torch.ManualSeed for a repeatable one).
func New(c *Config, h Heads, dev gotch.Device) (*Model, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if h.NSP && c.Family().nsp == "" {
		return nil, fmt.Errorf("%s has no next-sentence head", c.Arch)
	}
	vs := nn.NewVarStore(dev)
	return build(c, h, vs, vs.Root(), "build "+string(c.Arch))
}

// build creates the parameters of the encoder and of the heads h under root, initialised at random, and the
// Model around them. The order of creation is the order of libtorch's random draws, so a seeded model
// repeats: embeddings, layers 0..n-1, pooler, MLM head, next-sentence head.
func build(c *Config, h Heads, vs *nn.VarStore, root *nn.Path, what string) (*Model, error) {
	// gotch's initialisers switch grad mode off and on around each draw; grad mode is per OS thread, so
	// building on one thread keeps a migrating goroutine from leaving some thread with grad off.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f := c.Family()
	m := &Model{Config: c, Heads: h, VS: vs, params: map[string]*ts.Tensor{}}
	err := torch.Catch(what, func() error {
		p := &params{root: root, byName: m.params, std: c.InitializerRange}
		m.emb = newEmbeddings(p, c)
		for i := range int(c.NumLayers) {
			m.layers = append(m.layers, newBlock(p, f.LayerPrefix(i), f.block, c))
		}
		if h.Pooler {
			l := p.linear(f.poolerPrefix()+"dense", c.HiddenSize, c.HiddenSize, true)
			m.pooler = &l
		}
		if h.MLM {
			m.mlm = newMLMHead(p, c, m.emb.word)
		}
		if h.NSP {
			l := p.linear(f.nsp, c.HiddenSize, 2, true)
			m.nsp = &l
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Params are the model's parameters by HuggingFace name; tied parameters appear once.
func (m *Model) Params() map[string]*ts.Tensor { return m.params }

// Input is a padded batch: IDs and Mask are int64 [B,T]; TypeIDs may be nil (all zero). Unpadded says that
// every row is real tokens to its end, so Mask is all ones: the host that built the batch knows it without
// asking the device (BatchInput sets it), and the encoder then attends without a mask. False is always right.
type Input struct {
	IDs, Mask, TypeIDs *ts.Tensor
	Unpadded           bool
}

// Output holds every hidden state: Hidden[0] is the embedding output, Hidden[i] the output of layer i, and
// Last equals Hidden[len-1]. Pooled is BERT's pooler output when the model has a pooler.
type Output struct {
	Hidden []*ts.Tensor
	Last   *ts.Tensor
	Pooled *ts.Tensor
}

// Drop frees the output's tensors.
func (o *Output) Drop() {
	torch.Drop(o.Hidden...)
	torch.Drop(o.Pooled)
	o.Hidden, o.Last, o.Pooled = nil, nil, nil
}

// Forward runs the encoder. With train, dropout is on. Its libtorch calls count as torch.PhaseForward.
func (m *Model) Forward(in Input, train bool) (*Output, error) {
	defer torch.EnterPhase(torch.PhaseForward)()
	if err := m.checkInput(in); err != nil {
		return nil, err
	}
	out := &Output{}
	err := torch.Catch("forward", func() error {
		mask := newAttnMask(in.Mask, in.Unpadded) // once for all layers
		defer mask.drop()
		// convrep's fused kernels run the layers' tails where they are loaded on the input's device; asked once
		// per forward, and of libtorch only when they are loaded somewhere (a run without them makes no call).
		fused := torch.KernelsInUse() && torch.KernelsLoaded(in.IDs.MustDevice())
		packed := m.packedFor(train, in.IDs)
		x := m.emb.forward(in.IDs, in.TypeIDs, train, fused)
		out.Hidden = append(out.Hidden, x)
		for i, l := range m.layers {
			if packed != nil {
				x = l.forwardPacked(x, mask, &packed[i])
			} else {
				x = l.forward(x, mask, train, fused)
			}
			out.Hidden = append(out.Hidden, x)
		}
		if emb := out.Hidden[0]; fused && x.DType() != emb.DType() {
			// The fused kernels keep the residual stream in autocast's bfloat16 (block.fusedTail); what the
			// encoder returns has the dtype the composite's final LayerNorm gives, the embeddings'.
			x = x.MustTotype(emb.DType(), false)
			out.Hidden[len(out.Hidden)-1].MustDrop()
			out.Hidden[len(out.Hidden)-1] = x
		}
		out.Last = x
		if m.pooler != nil {
			first := x.MustSelect(1, 0, false)
			out.Pooled = m.pooler.forward(first).MustTanh(true)
			first.MustDrop()
		}
		return nil
	})
	if err != nil {
		out.Drop()
		return nil, err
	}
	return out, nil
}

// lowest is torch.finfo(float32).min, HuggingFace's value for masked attention scores.
const lowest = -3.4028234663852886e38

// extendedMask turns a 1/0 mask [B,T] into additive scores [B,1,1,T]: 0 at real tokens, lowest at padding.
func extendedMask(mask *ts.Tensor) *ts.Tensor {
	m := mask.MustTotype(gotch.Float, false).MustUnsqueeze(1, true).MustUnsqueeze(2, true)
	return m.MustMulScalar(ts.FloatScalar(-1), true).MustAddScalar(ts.FloatScalar(1), true).MustMulScalar(ts.FloatScalar(lowest), true)
}

func (m *Model) checkInput(in Input) error {
	if in.IDs == nil || in.Mask == nil {
		return fmt.Errorf("forward: input ids and attention mask are required")
	}
	size, err := in.IDs.Size()
	if err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	if len(size) != 2 {
		return fmt.Errorf("forward: input ids must be [batch, length], got shape %v", size)
	}
	if in.IDs.DType() != gotch.Int64 {
		return fmt.Errorf("forward: input ids must be int64, got %v", in.IDs.DType())
	}
	for name, t := range map[string]*ts.Tensor{"attention mask": in.Mask, "token type ids": in.TypeIDs} {
		if t == nil {
			continue
		}
		if s := t.MustSize(); len(s) != 2 || s[0] != size[0] || s[1] != size[1] {
			return fmt.Errorf("forward: %s has shape %v, input ids %v", name, s, size)
		}
	}
	if size[1] > m.Config.MaxSequence() {
		return fmt.Errorf("forward: sequence length %d exceeds the model's %d positions", size[1], m.Config.MaxSequence())
	}
	if !in.IDs.MustDevice().IsCuda() && size[0]*size[1] > 0 { // on a GPU the check would cost a sync
		lo, hi := minMax(in.IDs)
		if lo < 0 || hi >= m.Config.VocabSize {
			return fmt.Errorf("forward: token id %d outside the vocabulary of %d", map[bool]int64{true: lo, false: hi}[lo < 0], m.Config.VocabSize)
		}
		if in.TypeIDs != nil && m.emb.tokType != nil {
			if lo, hi := minMax(in.TypeIDs); lo < 0 || hi >= m.Config.TypeVocabSize {
				return fmt.Errorf("forward: token type ids span [%d, %d], the model has %d types", lo, hi, m.Config.TypeVocabSize)
			}
		}
	}
	return nil
}

func minMax(x *ts.Tensor) (int64, int64) {
	lo, hi := x.MustMin(false), x.MustMax(false)
	defer torch.Drop(lo, hi)
	return lo.Int64Values()[0], hi.Int64Values()[0]
}
