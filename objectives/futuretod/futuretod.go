// Package futuretod is the FutureTOD objective.
//
// FutureTOD: "FutureTOD: Teaching Future Knowledge to Pre-trained Language Model for Task-Oriented Dialogue"
// (Zeng et al., ACL 2023). Each dialogue is flattened as [CLS] [USR] u1 [SYS] s1 ... and split at a random
// turn into a context and a future (§2.2, SplitDialogue); the student S (the model being trained) encodes the
// context, the teacher T (a frozen copy of S) encodes the context followed by 1..P future utterances. The
// loss (Eq. 3) is L = L_dis + L_mlm: L_dis (Eq. 1-2, DistillLoss) pulls S's [CLS] state of each of the top K
// layers towards T's, and L_mlm is masked language modelling on the student's input only. T is replaced by
// S's weights every E epochs (Algorithm 1, lines 9-11; E = 10 in §3.1) or, as an option here, every E steps.
//
// As in TOD-BERT's code, which §2.2 follows for the MLM loss, the student runs once, on the masked context:
// its [CLS] states serve L_dis and its last layer L_mlm. The teacher sees the unmasked context and future,
// without dropout: it gives a fixed target.
//
// Settings ([objective] table, read by Parse): max_future (P: a number, "all", or "fix" for the
// whole future; default "all"), top_k_layers (K, 12), refresh_every (E, 10), refresh_unit ("epochs", the
// paper's, or "steps"), mask_prob (0.15), distance ("squared_l2", Eq. 1-2, or "mse"). Two settings are not
// the paper's, for the ablations of scripts/claims.sh: distill_weight (w in L = w·L_dis + L_mlm; the paper's
// Eq. 3 is w = 1, the default) and teacher_input ("newest", the default: the teacher's sequence, context then
// future, keeps its newest max_length tokens, as the student's does; "context_first": it keeps the student's
// whole context and then as much of the future as fits). The teacher's weights are objective state: the
// trainer saves them in each checkpoint (Stateful), so a resumed run distils towards the same teacher.
package futuretod

import (
	"fmt"
	"math"
	"strings"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/inputs"
	"convrep/objectives/mlm"
)

// Name is the name FutureTOD registers under.
const Name = "futuretod"

// Batch is B dialogues split into context and future.
type Batch struct {
	// Context is the student's input: [CLS] + the context utterances + [SEP], masked for MLM.
	Context models.Input
	// Labels are the MLM targets of Context: its masked positions and the original token at each.
	Labels inputs.Labels
	// Full is the teacher's input: [CLS] + the context and the chosen future utterances + [SEP], unmasked.
	Full models.Input
}

// RefreshUnit is what FutureTOD's refresh interval E counts.
type RefreshUnit string

const (
	RefreshEpochs RefreshUnit = "epochs" // the paper's: after every E-th epoch
	RefreshSteps  RefreshUnit = "steps"  // after every E-th optimiser step
)

// TeacherInput is how the teacher's sequence, the context followed by the future, fits model.max_length.
type TeacherInput string

const (
	// TeacherNewest keeps the newest tokens, as the student's context is cut: with a long future the teacher
	// may see none of the student's context.
	TeacherNewest TeacherInput = "newest"
	// TeacherContextFirst keeps the student's context as the student reads it and cuts the future's end.
	TeacherContextFirst TeacherInput = "context_first"
)

// Config are FutureTOD's settings.
type Config struct {
	Future        FutureLength
	TopK          int // the number of top encoder layers distilled (Table 5)
	RefreshEvery  int64
	RefreshUnit   RefreshUnit
	MaskProb      float64
	Distance      Distance
	DistillWeight float64 // w in L = w·L_dis + L_mlm (Eq. 3: 1)
	TeacherInput  TeacherInput
}

// Parse reads and checks FutureTOD's [objective] table strictly.
func Parse(s objectives.Settings) (Config, error) {
	r := s.Reader()
	future, futureErr := readFutureLength(r)
	o := Config{
		Future:        future,
		TopK:          int(r.Integer("top_k_layers", 12)),
		RefreshEvery:  r.Integer("refresh_every", 10),
		RefreshUnit:   RefreshUnit(strings.ToLower(r.Text("refresh_unit", string(RefreshEpochs)))),
		MaskProb:      r.Number("mask_prob", 0.15),
		DistillWeight: r.Number("distill_weight", 1),
		TeacherInput:  TeacherInput(strings.ToLower(r.Text("teacher_input", string(TeacherNewest)))),
	}
	dist := r.Text("distance", string(SquaredL2))
	if err := r.Done(); err != nil {
		return o, err
	}
	if futureErr != nil {
		return o, futureErr
	}
	var err error
	if o.Distance, err = ParseDistance(dist); err != nil {
		return o, fmt.Errorf("setting distance: %w", err)
	}
	switch {
	case o.TopK < 1:
		return o, fmt.Errorf("setting top_k_layers = %d: must be at least 1", o.TopK)
	case o.RefreshEvery < 1:
		return o, fmt.Errorf("setting refresh_every = %d: must be at least 1", o.RefreshEvery)
	case o.RefreshUnit != RefreshEpochs && o.RefreshUnit != RefreshSteps:
		return o, fmt.Errorf("setting refresh_unit = %q: want epochs or steps", o.RefreshUnit)
	case !(o.MaskProb > 0 && o.MaskProb <= 1):
		return o, fmt.Errorf("setting mask_prob = %v: must be in (0, 1]", o.MaskProb)
	case !(o.DistillWeight > 0) || math.IsInf(o.DistillWeight, 1):
		return o, fmt.Errorf("setting distill_weight = %v: must be a positive number", o.DistillWeight)
	case o.TeacherInput != TeacherNewest && o.TeacherInput != TeacherContextFirst:
		return o, fmt.Errorf("setting teacher_input = %q: want newest or context_first", o.TeacherInput)
	}
	return o, nil
}

// readFutureLength reads max_future: a positive whole number, "all" or "fix".
func readFutureLength(r *objectives.SettingsReader) (FutureLength, error) {
	const key = "max_future"
	v, ok := r.Value(key)
	if !ok {
		return FutureLength{}, nil
	}
	switch x := v.(type) {
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "all":
			return FutureLength{}, nil
		case "fix":
			return FutureLength{Fix: true}, nil
		}
	case int64:
		if x >= 1 && x <= math.MaxInt32 {
			return FutureLength{Max: int(x)}, nil
		}
	case int:
		if x >= 1 && x <= math.MaxInt32 {
			return FutureLength{Max: x}, nil
		}
	}
	return FutureLength{}, fmt.Errorf("setting %s = %v (%T): want a whole number ≥ 1, \"all\" or \"fix\"", key, v, v)
}

// paper is what a model trained with this objective cites.
var paper = objectives.Paper{Title: "FutureTOD: Teaching Future Knowledge to Pre-trained Language Model for Task-Oriented Dialogue (Zeng et al.)", Venue: "ACL 2023"}

func init() {
	objectives.Register(Name, paper, func(s objectives.Settings) (objectives.Config, error) { return Parse(s) })
}

// Needs: what every MLM objective over flattened dialogues needs, the MLM head and the role tokens.
func (c Config) Needs() objectives.Requirements { return mlm.Requirements }

// Build makes the teacher, a frozen copy of the student m.
func (c Config) Build(m *models.Model) (objectives.Objective, error) {
	if !m.Heads.MLM {
		return nil, fmt.Errorf("the student has no MLM head for Eq. 3's L_mlm (the trainer builds one from the objective's Requirements)")
	}
	if layers := int(m.Config.NumLayers); c.TopK > layers {
		return nil, fmt.Errorf("setting top_k_layers = %d: the encoder has %d layers", c.TopK, layers)
	}
	t, err := newTeacher(m)
	if err != nil {
		return nil, err
	}
	return &futureTOD{opt: c, student: m, teacher: t}, nil
}

type futureTOD struct {
	opt     Config
	student *models.Model
	teacher *teacher
}

var (
	_ objectives.AfterStepper = (*futureTOD)(nil)
	_ objectives.Stateful     = (*futureTOD)(nil)
	_ objectives.Validator    = (*futureTOD)(nil)
)

// Groups: the student and its MLM head at train.lr; the teacher lives outside the student's VarStore.
func (f *futureTOD) Groups() []objectives.Group {
	return []objectives.Group{objectives.EncoderGroup(f.student)}
}

// Dataset is the dialogues, split into context and future afresh each epoch (data.go).
func (f *futureTOD) Dataset(env objectives.DataEnv) (objectives.Dataset, error) {
	return newFutureTODData(env, f.opt)
}

func (f *futureTOD) Name() string { return Name }

// Loss takes a Batch (or *Batch) and returns Eq. 3, L_dis + L_mlm (w·L_dis + L_mlm with distill_weight w).
// metrics holds both parts, unweighted: distill and mlm.
func (f *futureTOD) Loss(batch any, train bool) (loss *ts.Tensor, metrics map[string]*ts.Tensor, err error) {
	b, err := objectives.BatchAs[Batch](Name, batch)
	if err != nil {
		return nil, nil, err
	}
	m := f.student
	if b.Context.IDs == nil || b.Full.IDs == nil || !b.Labels.Defined() {
		return nil, nil, fmt.Errorf("futuretod loss: the batch needs the context, its MLM labels and the full dialogue")
	}
	cs, _ := b.Context.IDs.Size()
	fs, _ := b.Full.IDs.Size()
	if len(cs) != 2 || len(fs) != 2 || cs[0] != fs[0] {
		return nil, nil, fmt.Errorf("futuretod loss: context %v and full dialogue %v must be [batch, length] with one batch", cs, fs)
	}
	err = torch.Scoped("futuretod loss", func(keep torch.Keep) error {
		// Algorithm 1, line 4: the student encodes the (masked) context.
		out, err := m.Forward(b.Context, train)
		if err != nil {
			return fmt.Errorf("futuretod loss: student: %w", err)
		}
		hs, err := topCLS(out, f.opt.TopK)
		if err != nil {
			return fmt.Errorf("futuretod loss: student: %w", err)
		}
		// Line 5: the teacher encodes the context and the future, without gradients or dropout.
		ht, err := f.teacher.encode(b.Full, f.opt.TopK, false)
		if err != nil {
			return fmt.Errorf("futuretod loss: %w", err)
		}
		// Lines 6-7: Eq. 2 and the MLM loss on the student's output.
		dis, err := DistillLoss(hs, ht, f.opt.Distance)
		if err != nil {
			return fmt.Errorf("futuretod loss: %w", err)
		}
		lm, err := mlm.LossFromHidden(m, out.Last, b.Labels)
		if err != nil {
			return fmt.Errorf("futuretod loss: %w", err)
		}
		lDis, lMLM := torch.Of(dis), torch.Of(lm)
		metrics = map[string]*ts.Tensor{"distill": keep(objectives.Metric(lDis)), "mlm": keep(objectives.Metric(lMLM))}
		if w := f.opt.DistillWeight; w != 1 {
			lDis = lDis.MulScalar(w)
		}
		loss = keep(lDis.Add(lMLM)) // Eq. 3
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return loss, metrics, nil
}

// AfterStep is Algorithm 1, lines 9-11: after every E-th epoch (or step), the teacher takes the student's
// weights.
func (f *futureTOD) AfterStep(p objectives.Progress) error {
	if !f.refreshDue(p) {
		return nil
	}
	if err := f.teacher.refresh(f.student); err != nil {
		return fmt.Errorf("futuretod: step %d: %w", p.Step, err)
	}
	return nil
}

func (f *futureTOD) refreshDue(p objectives.Progress) bool {
	if f.opt.RefreshUnit == RefreshSteps {
		return p.Step > 0 && p.Step%f.opt.RefreshEvery == 0
	}
	return p.EndOfEpoch && int64(p.Epoch+1)%f.opt.RefreshEvery == 0
}

// State is the teacher's weights: everything besides the student that the run's future depends on.
func (f *futureTOD) State() map[string]*ts.Tensor { return f.teacher.state() }

// Embedding: FutureTOD distils and is fine-tuned through the [CLS] state (§2.2, §3.2).
func (f *futureTOD) Embedding() (models.Pooling, bool) { return models.CLS, false }

// ValidationLoss is the held-out measure FutureTOD's pretraining stops early on, the perplexity of the
// masked tokens (§3.1: "an early-stopped strategy based on perplexity scores of a held-out development
// [set]"): the student's summed MLM negative log-likelihood over the batch's masked context tokens, and
// their number. The teacher plays no part in it.
func (f *futureTOD) ValidationLoss(batch any) (*ts.Tensor, int64, error) {
	b, err := objectives.BatchAs[Batch](Name, batch)
	if err != nil {
		return nil, 0, err
	}
	if b.Context.IDs == nil || !b.Labels.Defined() {
		return nil, 0, fmt.Errorf("futuretod validation: the batch needs the context and its MLM labels")
	}
	sum, err := mlm.SumNLL(f.student, b.Context, b.Labels)
	if err != nil {
		return nil, 0, fmt.Errorf("futuretod validation: %w", err)
	}
	return sum, b.Labels.N, err
}
