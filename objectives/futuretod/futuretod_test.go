package futuretod

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/inputs"
	"convrep/objectives/internal/testutil"
	"convrep/objectives/mlm"
	"convrep/trainer/optim"
)

// tinyStudent is a two-layer BERT with the MLM head FutureTOD's Requirements ask for.
func tinyStudent(t *testing.T, seed uint64) *models.Model {
	t.Helper()
	testutil.GradOn(t)
	if err := torch.ManualSeed(seed); err != nil {
		t.Fatal(err)
	}
	c := &models.Config{Arch: models.BERT, VocabSize: 50, HiddenSize: 16, NumLayers: 2, NumHeads: 2,
		IntermediateSize: 32, HiddenAct: "gelu", HiddenDropout: 0.1, AttentionDropout: 0.1, MaxPositions: 32,
		TypeVocabSize: 2, LayerNormEps: 1e-12, InitializerRange: 0.02, TieWordEmbeddings: true}
	m, err := models.New(c, models.Heads{MLM: true}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A batch of three dialogues: the student's contexts (id 4 plays [MASK]) and the teacher's context + future.
func futureBatch() Batch {
	ctx := [][]int64{{2, 7, 4, 9, 3}, {2, 11, 3}, {2, 5, 4, 8, 4, 3}}
	labels := [][]int64{{-100, -100, 12, -100, -100, -100}, {-100, -100, -100, -100, -100, -100}, {-100, -100, 6, -100, 20, -100}}
	full := [][]int64{{2, 7, 12, 9, 30, 31, 3}, {2, 11, 40, 41, 42, 3}, {2, 5, 6, 8, 20, 21, 22, 3}}
	lab, err := inputs.LabelsOf(labels, gotch.CPU)
	if err != nil {
		panic(err)
	}
	return Batch{Context: testutil.Input(ctx, 6), Labels: lab, Full: testutil.Input(full, 8)}
}

func buildFutureTOD(t *testing.T, m *models.Model, s objectives.Settings) *futureTOD {
	t.Helper()
	o, err := testutil.New("FutureTOD", m, s)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := o.(*futureTOD)
	if !ok {
		t.Fatalf("New(futuretod) gave %T", o)
	}
	return f
}

// snapshot copies the values of the teacher's parameters (by parameter name).
func snapshot(ps map[string]*ts.Tensor, names []string) map[string][]float64 {
	out := map[string][]float64{}
	for _, n := range names {
		out[n] = ps[n].Float64Values()
	}
	return out
}

// sameValues says whether every named tensor of ps holds exactly the values of want.
func sameValues(ps map[string]*ts.Tensor, want map[string][]float64) (bool, string) {
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		got := ps[n].Float64Values()
		for i := range got {
			if got[i] != want[n][i] {
				return false, n
			}
		}
	}
	return true, ""
}

// The teacher starts as the student, lives outside the student's VarStore, takes no gradient, is never
// changed by the optimiser, and equals the student exactly right after each refresh (every 2 steps here).
func TestFutureTODTeacherFrozenAndRefreshed(t *testing.T) {
	m := tinyStudent(t, 5)
	f := buildFutureTOD(t, m, objectives.Settings{"top_k_layers": int64(2), "refresh_every": int64(2), "refresh_unit": "steps"})
	teach := f.teacher.model.Params()
	if len(f.teacher.names) != len(teach) || len(teach) == 0 {
		t.Fatalf("teacher has %d names for %d parameters", len(f.teacher.names), len(teach))
	}
	if ok, n := sameValues(teach, snapshot(m.Params(), f.teacher.names)); !ok {
		t.Fatalf("right after construction the teacher's %s differs from the student's", n)
	}
	// Separate storage: the teacher is a copy, not an alias of the student's tensors.
	student := m.Params()
	for _, n := range f.teacher.names {
		if teach[n].MustRequiresGrad() {
			t.Fatalf("teacher parameter %s requires grad", n)
		}
		if teach[n].MustDataPtr() == student[n].MustDataPtr() {
			t.Fatalf("teacher parameter %s shares storage with the student", n)
		}
	}
	for name := range m.VS.Variables() {
		v, err := m.VS.Root().Get(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range teach {
			if v.MustDataPtr() == tp.MustDataPtr() {
				t.Fatalf("the student's VarStore holds the teacher's tensor as %s", name)
			}
		}
	}
	var group optim.Group
	for name := range m.VS.Variables() {
		p, err := m.VS.Root().Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if p.MustRequiresGrad() {
			group.Params, group.ParamNames = append(group.Params, p), append(group.ParamNames, name)
		}
	}
	group.Name, group.LR = "student", 1e-2
	opt, err := optim.New(optim.Config{Kind: "adam"}, []optim.Group{group})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.State()) != len(teach) {
		t.Fatalf("State has %d tensors, the teacher %d", len(f.State()), len(teach))
	}
	for name := range f.State() {
		if !strings.HasPrefix(name, "teacher.") {
			t.Fatalf("state tensor %q is not named teacher.*", name)
		}
	}

	refreshed := snapshot(teach, f.teacher.names)
	for step := int64(1); step <= 5; step++ {
		b := futureBatch()
		loss, mt, err := f.Loss(b, true)
		metrics := testutil.Metrics(t, mt)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := loss.Float64Values()[0], metrics["distill"]+metrics["mlm"]; math.Abs(got-want) > 1e-5*math.Max(1, want) {
			t.Fatalf("step %d: loss %v is not distill + mlm = %v (%v)", step, got, want, metrics)
		}
		loss.MustBackward()
		loss.MustDrop()
		for _, n := range f.teacher.names {
			if g := teach[n].MustGrad(false); g.MustDefined() {
				t.Fatalf("step %d: teacher parameter %s has a gradient", step, n)
			}
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		if ok, n := sameValues(teach, refreshed); !ok {
			t.Fatalf("step %d: the optimiser step changed the teacher's %s", step, n)
		}
		if ok, _ := sameValues(teach, snapshot(student, f.teacher.names)); ok {
			t.Fatalf("step %d: the student did not move away from the teacher", step)
		}
		if err := f.AfterStep(objectives.Progress{Step: step, Epoch: 0}); err != nil {
			t.Fatal(err)
		}
		if step%2 == 0 {
			if ok, n := sameValues(teach, snapshot(student, f.teacher.names)); !ok {
				t.Fatalf("step %d: right after the refresh the teacher's %s differs from the student's", step, n)
			}
			refreshed = snapshot(teach, f.teacher.names)
		} else if ok, n := sameValues(teach, refreshed); !ok {
			t.Fatalf("step %d: the teacher's %s changed without a refresh", step, n)
		}
	}
}

func TestFutureTODRefreshSchedule(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    objectives.Settings
		p    objectives.Progress
		want bool
	}{
		{"epoch 10 ends", objectives.Settings{}, objectives.Progress{Step: 500, Epoch: 9, EndOfEpoch: true}, true},
		{"epoch 20 ends", objectives.Settings{}, objectives.Progress{Step: 1000, Epoch: 19, EndOfEpoch: true}, true},
		{"epoch 9 ends", objectives.Settings{}, objectives.Progress{Step: 450, Epoch: 8, EndOfEpoch: true}, false},
		{"inside epoch 10", objectives.Settings{}, objectives.Progress{Step: 499, Epoch: 9}, false},
		{"every epoch", objectives.Settings{"refresh_every": int64(1)}, objectives.Progress{Step: 7, Epoch: 0, EndOfEpoch: true}, true},
		{"step 30 of every 15", objectives.Settings{"refresh_unit": "steps", "refresh_every": int64(15)}, objectives.Progress{Step: 30, Epoch: 3}, true},
		{"step 31 of every 15", objectives.Settings{"refresh_unit": "steps", "refresh_every": int64(15)}, objectives.Progress{Step: 31, Epoch: 3, EndOfEpoch: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt, err := Parse(tc.s)
			if err != nil {
				t.Fatal(err)
			}
			if got := (&futureTOD{opt: opt}).refreshDue(tc.p); got != tc.want {
				t.Fatalf("refresh due at %+v: %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

// Without dropout the loss is Eq. 3 recomputed from the model's own outputs: the distillation part by loops
// over the student's and the teacher's [CLS] states of the top K layers, the MLM part by mlm.LossFromHidden.
func TestFutureTODLossIsEquation3(t *testing.T) {
	for _, k := range []int64{1, 2} {
		m := tinyStudent(t, 6)
		f := buildFutureTOD(t, m, objectives.Settings{"top_k_layers": k})
		b := futureBatch()
		loss, mt, err := f.Loss(b, false)
		metrics := testutil.Metrics(t, mt)
		if err != nil {
			t.Fatal(err)
		}
		// The teacher is still the student: run the student on both inputs.
		so, err := m.Forward(b.Context, false)
		if err != nil {
			t.Fatal(err)
		}
		to, err := m.Forward(b.Full, false)
		if err != nil {
			t.Fatal(err)
		}
		var s, te [][][]float64
		for l := 3 - int(k); l <= 2; l++ { // Hidden[1], Hidden[2] are the two layers' outputs
			s, te = append(s, clsRows(so.Hidden[l])), append(te, clsRows(to.Hidden[l]))
		}
		wantDis := distillByLoops(s, te, SquaredL2)
		mlm, err := mlm.LossFromHidden(m, so.Last, b.Labels)
		if err != nil {
			t.Fatal(err)
		}
		wantMLM := mlm.Float64Values()[0]
		if d := math.Abs(metrics["distill"] - wantDis); d > 1e-4*math.Max(1, wantDis) {
			t.Errorf("K=%d: distill %v, by loops %v", k, metrics["distill"], wantDis)
		}
		if d := math.Abs(metrics["mlm"] - wantMLM); d > 1e-5 {
			t.Errorf("K=%d: mlm %v, recomputed %v", k, metrics["mlm"], wantMLM)
		}
		if got := loss.Float64Values()[0]; math.Abs(got-wantDis-wantMLM) > 1e-4*math.Max(1, got) {
			t.Errorf("K=%d: loss %v, want %v + %v", k, got, wantDis, wantMLM)
		}
		if wantDis == 0 {
			t.Errorf("K=%d: the teacher's input with the future gave the context's representation", k)
		}
		// distill_weight w: L = w·L_dis + L_mlm, the metrics unweighted.
		w := buildFutureTOD(t, m, objectives.Settings{"top_k_layers": k, "distill_weight": 0.25})
		wloss, wmt, err := w.Loss(b, false)
		if err != nil {
			t.Fatal(err)
		}
		wm := testutil.Metrics(t, wmt)
		if got := wloss.Float64Values()[0]; math.Abs(got-0.25*wantDis-wantMLM) > 1e-4*math.Max(1, got) {
			t.Errorf("K=%d, distill_weight 0.25: loss %v, want 0.25·%v + %v", k, got, wantDis, wantMLM)
		}
		if math.Abs(wm["distill"]-metrics["distill"]) > 1e-6*math.Max(1, wantDis) {
			t.Errorf("K=%d: the distill metric %v under distill_weight 0.25, %v without: want it unweighted", k, wm["distill"], metrics["distill"])
		}
	}
}

// clsRows reads the [CLS] row of each example of hidden [B,T,H].
func clsRows(hidden *ts.Tensor) [][]float64 {
	size := hidden.MustSize()
	cls := hidden.MustSelect(1, 0, false)
	v := cls.Float64Values(true)
	out := make([][]float64, size[0])
	for b := range out {
		out[b] = v[int64(b)*size[2] : int64(b+1)*size[2]]
	}
	return out
}

func TestFutureTODSettings(t *testing.T) {
	opt, err := Parse(objectives.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if opt.Future != (FutureLength{}) || opt.TopK != 12 || opt.RefreshEvery != 10 || opt.RefreshUnit != RefreshEpochs || opt.MaskProb != 0.15 || opt.Distance != SquaredL2 ||
		opt.DistillWeight != 1 || opt.TeacherInput != TeacherNewest {
		t.Fatalf("defaults %+v, want the paper's: P all, K 12, E 10 epochs, mask 0.15, squared L2, Eq. 3's weight 1, the newest tokens", opt)
	}
	if opt, err := Parse(objectives.Settings{"distill_weight": 0.01, "teacher_input": "context_first"}); err != nil || opt.DistillWeight != 0.01 || opt.TeacherInput != TeacherContextFirst {
		t.Errorf("distill_weight 0.01, teacher_input context_first: %+v, %v", opt, err)
	}
	for _, tc := range []struct {
		in   any
		want FutureLength
	}{{"all", FutureLength{}}, {"ALL", FutureLength{}}, {"fix", FutureLength{Fix: true}}, {int64(3), FutureLength{Max: 3}}, {int64(1), FutureLength{Max: 1}}} {
		opt, err := Parse(objectives.Settings{"max_future": tc.in})
		if err != nil || opt.Future != tc.want {
			t.Errorf("max_future = %v: %+v, %v; want %+v", tc.in, opt.Future, err, tc.want)
		}
	}
	for _, tc := range []struct {
		s    objectives.Settings
		want string
	}{
		{objectives.Settings{"max_future": int64(0)}, "max_future"},
		{objectives.Settings{"max_future": "some"}, "max_future"},
		{objectives.Settings{"max_future": 2.5}, "max_future"},
		{objectives.Settings{"top_k_layers": int64(0)}, "top_k_layers"},
		{objectives.Settings{"refresh_every": int64(0)}, "refresh_every"},
		{objectives.Settings{"refresh_unit": "hours"}, "refresh_unit"},
		{objectives.Settings{"mask_prob": 0.0}, "mask_prob"},
		{objectives.Settings{"mask_prob": 1.5}, "mask_prob"},
		{objectives.Settings{"distance": "cosine"}, "cosine"},
		{objectives.Settings{"distill_weight": 0.0}, "distill_weight"},
		{objectives.Settings{"distill_weight": -1.0}, "distill_weight"},
		{objectives.Settings{"distill_weight": math.Inf(1)}, "distill_weight"},
		{objectives.Settings{"teacher_input": "oldest"}, "teacher_input"},
		{objectives.Settings{"temperature": 0.1}, "unknown setting temperature"},
	} {
		if _, err := Parse(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error mentioning %q", tc.s, err, tc.want)
		}
	}
	// K beyond the encoder's depth, and a student without its MLM head, are refused when building.
	if _, err := testutil.New("futuretod", tinyStudent(t, 1), objectives.Settings{"top_k_layers": int64(3)}); err == nil || !strings.Contains(err.Error(), "2 layers") {
		t.Errorf("K = 3 on two layers: %v", err)
	}
	if _, err := testutil.New("futuretod", testutil.TinyBERT(t, 1), objectives.Settings{"top_k_layers": int64(2)}); err == nil || !strings.Contains(err.Error(), "MLM head") {
		t.Errorf("no MLM head: %v", err)
	}
	if r := testutil.RequirementsOf("futuretod"); !r.Heads.MLM || strings.Join(r.SpecialTokens, " ") != "[USR] [SYS]" {
		t.Errorf("requirements %+v: want the MLM head and the role tokens", r)
	}
}

func TestFutureTODBadBatch(t *testing.T) {
	m := tinyStudent(t, 1)
	f := buildFutureTOD(t, m, objectives.Settings{"top_k_layers": int64(2)})
	b := futureBatch()
	short := b
	short.Full = testutil.Input([][]int64{{2, 3}}, 2)
	for _, tc := range []struct {
		name  string
		model *models.Model
		batch any
		want  string
	}{
		{"wrong type", m, struct{}{}, "want futuretod.Batch"},
		{"nil pointer", m, (*Batch)(nil), "nil batch"},
		{"no labels", m, Batch{Context: b.Context, Full: b.Full}, "MLM labels"},
		{"batch sizes differ", m, short, "one batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := f.Loss(tc.batch, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
