package futuretod

import (
	"fmt"
	"sort"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
)

// teacher is FutureTOD's teacher T (§2.2 "Parameter Updating", Algorithm 1): a second encoder of the same
// configuration as the student S, initialised with S's weights and replaced by them every E epochs (or steps).
// It lives in a VarStore of its own whose tensors do not require gradients, so the trainer's optimiser, which
// is built from the student's VarStore, never sees it, and its forward runs under no-grad.
type teacher struct {
	model *models.Model
	names []string // the teacher's parameter names, sorted: the encoder's, no heads
}

// teacherPrefix names the teacher's tensors in a checkpoint's objective state.
const teacherPrefix = "teacher."

// newTeacher builds the teacher from the student's configuration and copies the student's encoder into it.
// The teacher has no heads: it only encodes.
func newTeacher(student *models.Model) (*teacher, error) {
	cfg := *student.Config
	m, err := models.New(&cfg, models.Heads{}, student.VS.Device())
	if err != nil {
		return nil, fmt.Errorf("build the teacher: %w", err)
	}
	if err := m.VS.Freeze(); err != nil {
		return nil, fmt.Errorf("freeze the teacher: %w", err)
	}
	t := &teacher{model: m}
	for name := range m.Params() {
		t.names = append(t.names, name)
	}
	sort.Strings(t.names)
	if err := t.refresh(student); err != nil {
		return nil, err
	}
	return t, nil
}

// refresh is Algorithm 1, line 10: assign S's parameters to T. Every teacher parameter must exist in the
// student with the same shape; the student's heads (MLM) have no counterpart and are left out.
func (t *teacher) refresh(student *models.Model) error {
	src := student.Params()
	for _, name := range t.names {
		s, ok := src[name]
		if !ok {
			return fmt.Errorf("refresh the teacher: the student has no parameter %s", name)
		}
		got, _ := s.Size()
		want, _ := t.model.Params()[name].Size()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("refresh the teacher: parameter %s is %v in the student, %v in the teacher", name, got, want)
		}
	}
	return torch.Catch("refresh the teacher", func() error {
		return torch.NoGrad(func() error {
			dst := t.model.Params()
			for _, name := range t.names {
				dst[name].Copy_(src[name])
			}
			return nil
		})
	})
}

// encode runs the teacher on in under no-grad and returns the [CLS] states of its top k layers (detached
// leaves, no graph). train turns the teacher's dropout on. It runs in its caller's scope (torch.Scoped);
// the layers it does not return are freed at once.
func (t *teacher) encode(in models.Input, k int, train bool) ([]*ts.Tensor, error) {
	var cls []*ts.Tensor
	err := torch.NoGrad(func() error {
		out, err := t.model.Forward(in, train)
		if err != nil {
			return fmt.Errorf("teacher: %w", err)
		}
		defer out.Drop()
		cls, err = topCLS(out, k)
		return err
	})
	return cls, err
}

// state is the teacher's weights by checkpoint name (teacher.<parameter name>).
func (t *teacher) state() map[string]*ts.Tensor {
	out := make(map[string]*ts.Tensor, len(t.names))
	for _, name := range t.names {
		out[teacherPrefix+name] = t.model.Params()[name]
	}
	return out
}
