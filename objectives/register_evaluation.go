package objectives

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/sugarme/gotch"

	"convrep/models"
)

// evaluations maps lower-case objective names to their Evaluation.
var evaluations = struct {
	mu sync.RWMutex
	m  map[string]Evaluation
}{m: map[string]Evaluation{}}

// RegisterEvaluation registers the Evaluation of the objective registered as name. An empty name, a nil
// Evaluation or a name that already has one is refused.
func RegisterEvaluation(name string, e Evaluation) error {
	key := strings.ToLower(strings.TrimSpace(name))
	evaluations.mu.Lock()
	defer evaluations.mu.Unlock()
	switch _, taken := evaluations.m[key]; {
	case key == "":
		return fmt.Errorf("objectives: register evaluation: empty objective name")
	case e == nil:
		return fmt.Errorf("objectives: register evaluation %q: nil evaluation", name)
	case taken:
		return fmt.Errorf("objectives: register evaluation %q: the name already has one", name)
	}
	evaluations.m[key] = e
	return nil
}

// registeredEvaluations are the registered Evaluations in the order of their objectives' names.
func registeredEvaluations() []Evaluation {
	evaluations.mu.RLock()
	defer evaluations.mu.RUnlock()
	out := make([]Evaluation, 0, len(evaluations.m))
	for _, name := range slices.Sorted(maps.Keys(evaluations.m)) {
		out = append(out, evaluations.m[name])
	}
	return out
}

// ResponseEncoderAt is the response encoder the checkpoint at path holds (Evaluation.ResponseEncoder), nil
// when no registered objective finds one there.
func ResponseEncoderAt(cfg *models.Config, path string, dev gotch.Device) (*models.Model, error) {
	for _, e := range registeredEvaluations() {
		m, err := e.ResponseEncoder(cfg, path, dev)
		if err != nil || m != nil {
			return m, err
		}
	}
	return nil, nil
}

// HeadAt is the head the checkpoint at path holds under name (Evaluation.Head).
func HeadAt(path, name string) (Head, error) {
	var errs []error
	for _, e := range registeredEvaluations() {
		h, err := e.Head(path, name)
		if err == nil && h != nil {
			return h, nil
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s: no registered objective writes a head (import convrep/objectives/all)", path)
}

// EnsembleOf combines members' scores as the objective registered as name defines an ensemble
// (Evaluation.Ensemble): [member][query][candidate] into [query][candidate].
func EnsembleOf(name string, scores [][][]float64) ([][]float64, error) {
	evaluations.mu.RLock()
	e, ok := evaluations.m[strings.ToLower(name)]
	evaluations.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("objective %q has no registered evaluation (import convrep/objectives/all)", name)
	}
	out, err := e.Ensemble(scores)
	if err == nil && out == nil {
		err = fmt.Errorf("objective %q defines no ensemble", name)
	}
	return out, err
}
