// Package objectives holds the pretraining objectives of convrep: DSE, FutureTOD, DialogueCSE and MGT, and the
// baselines MLM, SimCSE (dropout) and TOD-BERT's response contrastive loss. Each objective is one unit,
// the files objectives/<name>*.go, that starts from its paper's equations and declares everything a run
// needs of it: its name, its settings (read once and strictly), what it needs of the backbone, its
// parameter groups with the learning rate each uses, its dataset and its loss. The trainer knows objectives
// only through Config and Objective: it parses the [objective] table with Parse, builds the backbone the
// Config needs, builds the objective on it, asks it for its groups and its dataset, and calls Loss per batch.
//
// Adding an objective is one file that calls Register from an init function (see the README's "Adding an
// objective" and toy_test.go).
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

// Config is an objective whose settings have been read. Needs says what it needs of the backbone, before the
// backbone exists; Build makes the objective on the backbone m, adding its own parameters (a projection
// head, a second encoder) to m.VS before the trainer builds the optimiser.
type Config interface {
	Needs() Requirements
	Build(m *models.Model) (Objective, error)
}

// Objective is an objective built on its model.
type Objective interface {
	// Name is the name the objective was registered under.
	Name() string
	// Groups are the optimiser's parameter groups (see Group): every trainable tensor of the model's VarStore
	// in exactly one, in the order the optimiser and the gradient clipping visit them.
	Groups() []Group
	// Dataset builds the training examples from the run's data.
	Dataset(env DataEnv) (Dataset, error)
	// Loss computes the loss of one batch (the Value of a Batch its Dataset made) as a scalar tensor that
	// still holds its graph; the trainer runs backward and the optimiser step and drops the loss. train
	// turns dropout on. Under mixed precision the loss is computed in fp32 (see Upcast and FP32). metrics
	// are extra numbers worth logging (may be nil), each a detached 0-dim tensor on the device, never read
	// back here (see Metric); the caller drops them (DropMetrics).
	Loss(batch any, train bool) (loss *ts.Tensor, metrics map[string]*ts.Tensor, err error)
}

// Parser reads an objective's [objective] table (without its name) strictly: a key it does not know is an
// error naming the key, so a typo cannot silently fall back to a default.
type Parser func(s Settings) (Config, error)

// registry maps lower-case names to parsers. A refused registration is kept and reported by every later
// Parse, since it usually happens in an init function that has no caller to return an error to.
type registry struct {
	mu      sync.RWMutex
	parsers map[string]Parser
	refused []error
}

var builtin = &registry{parsers: map[string]Parser{}}

// Register makes an objective available under name (matched case-insensitively). An empty name, a nil parser
// or a name already taken is refused: the error is returned and also reported by Parse.
func Register(name string, p Parser) error { return builtin.register(name, p) }

// Parse reads an experiment's [objective] table: name picks the objective, which reads the other keys.
func Parse(table map[string]any) (Config, error) { return builtin.parse(table) }

// Names lists the registered objectives, sorted.
func Names() []string { return builtin.names() }

func (r *registry) register(name string, p Parser) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := strings.ToLower(strings.TrimSpace(name))
	var err error
	switch _, taken := r.parsers[key]; {
	case key == "":
		err = fmt.Errorf("objectives: register: empty objective name")
	case p == nil:
		err = fmt.Errorf("objectives: register %q: nil parser", name)
	case taken:
		err = fmt.Errorf("objectives: register %q: the name is already taken", name)
	default:
		r.parsers[key] = p
		return nil
	}
	r.refused = append(r.refused, err)
	return err
}

func (r *registry) parse(table map[string]any) (Config, error) {
	name, ok := table["name"].(string)
	if !ok || strings.TrimSpace(name) == "" {
		return nil, fmt.Errorf("name is required (one of %s)", strings.Join(r.names(), ", "))
	}
	r.mu.RLock()
	p, ok := r.parsers[strings.ToLower(strings.TrimSpace(name))]
	refused := errors.Join(r.refused...)
	r.mu.RUnlock()
	if refused != nil {
		return nil, refused
	}
	if !ok {
		return nil, fmt.Errorf("unknown objective %q (known: %s)", name, strings.Join(r.names(), ", "))
	}
	s := Settings{}
	for k, v := range table {
		if k != "name" {
			s[k] = v
		}
	}
	c, err := p(s)
	if err != nil {
		return nil, fmt.Errorf("objective %q: %w", name, err)
	}
	return c, nil
}

func (r *registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.parsers))
	for n := range r.parsers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Build parses table and builds the objective on m (a shortcut for tests and tools).
func Build(table map[string]any, m *models.Model) (Objective, error) {
	c, err := Parse(table)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("objectives: %v: no model", table["name"])
	}
	return c.Build(m)
}

// BatchAs gives the batch an objective's Loss was handed as its own type B, accepting B or a non-nil *B.
func BatchAs[B any](objective string, batch any) (B, error) {
	var zero B
	switch x := batch.(type) {
	case B:
		return x, nil
	case *B:
		if x != nil {
			return *x, nil
		}
		return zero, fmt.Errorf("%s loss: nil batch", objective)
	}
	return zero, fmt.Errorf("%s loss: batch is %T, want %T", objective, batch, zero)
}
