// Package objectives holds the pretraining objectives of convrep (DSE's contrastive loss first; FutureTOD,
// DialogueCSE, MGT, MLM, SimCSE and TOD-BERT's response contrastive loss plug in the same way), each in its
// own file that starts from the paper's equations and registers itself by name. The trainer knows none of
// them by type: it calls New with the name and the [objective] table of the experiment, then Loss per batch.
package objectives

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/sugarme/gotch/ts"

	"convrep/models"
)

// Objective turns one batch into a training loss.
type Objective interface {
	// Name is the name the objective was registered under.
	Name() string
	// Loss computes the loss of one batch as a scalar tensor that still holds its graph; the trainer
	// runs backward and the optimiser step and drops the loss. batch is objective-specific (each
	// objective documents its batch type and type-asserts it). train turns dropout on. metrics are
	// extra numbers worth logging (may be nil).
	Loss(m *models.Model, batch any, train bool) (loss *ts.Tensor, metrics map[string]float64, err error)
}

// Factory builds an objective for model m from its settings. It may add parameters (a projection head)
// to m.VS, so it runs before the trainer builds the optimiser.
type Factory func(m *models.Model, s Settings) (Objective, error)

// registry maps lower-case names to factories. A refused registration is kept and reported by every
// later New, since it usually happens in an init function that has no caller to return an error to.
type registry struct {
	mu        sync.RWMutex
	factories map[string]Factory
	needs     map[string]Requirements
	refused   []error
}

var builtin = &registry{factories: map[string]Factory{}, needs: map[string]Requirements{}}

// Register makes the objective f available under name (matched case-insensitively). An empty name, a nil
// factory or a name already taken is refused: the error is returned and also reported by New.
func Register(name string, f Factory) error { return builtin.register(name, f) }

// New builds the objective registered under name for model m.
func New(name string, m *models.Model, s Settings) (Objective, error) {
	return builtin.build(name, m, s)
}

// Names lists the registered objectives, sorted.
func Names() []string { return builtin.names() }

func (r *registry) register(name string, f Factory) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := strings.ToLower(strings.TrimSpace(name))
	var err error
	switch _, taken := r.factories[key]; {
	case key == "":
		err = fmt.Errorf("objectives: register: empty objective name")
	case f == nil:
		err = fmt.Errorf("objectives: register %q: nil factory", name)
	case taken:
		err = fmt.Errorf("objectives: register %q: the name is already taken", name)
	default:
		r.factories[key] = f
		return nil
	}
	r.refused = append(r.refused, err)
	return err
}

func (r *registry) build(name string, m *models.Model, s Settings) (Objective, error) {
	r.mu.RLock()
	f, ok := r.factories[strings.ToLower(strings.TrimSpace(name))]
	refused := errors.Join(r.refused...)
	r.mu.RUnlock()
	if refused != nil {
		return nil, refused
	}
	if !ok {
		return nil, fmt.Errorf("objectives: unknown objective %q (known: %s)", name, strings.Join(r.names(), ", "))
	}
	if m == nil {
		return nil, fmt.Errorf("objectives: objective %q: no model", name)
	}
	o, err := f(m, s)
	if err != nil {
		return nil, fmt.Errorf("objectives: objective %q: %w", name, err)
	}
	return o, nil
}

func (r *registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.factories))
	for n := range r.factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
