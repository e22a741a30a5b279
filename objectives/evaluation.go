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

// Evaluation is what evaluation asks of an objective about the models it trains, so that neither package
// evaluate nor the evaluate command imports an objective's package: the second encoder a checkpoint holds,
// the head it holds, and the ensemble the objective's paper defines. An objective that has any of them
// registers its Evaluation with RegisterEvaluation from its init function, beside Register; evaluation finds
// it through the registry (convrep/objectives/all fills it). A method the objective has nothing for returns
// nil and no error.
type Evaluation interface {
	// ResponseEncoder builds an encoder of configuration cfg on dev holding the response encoder the
	// checkpoint at path holds beside the backbone (MGT §3.1's f_r), or nil when it holds none. Response
	// selection embeds its candidates with it and scores them by the dot product with the context (MGT Eq. 4).
	ResponseEncoder(cfg *models.Config, path string, dev gotch.Device) (*models.Model, error)
	// Head reads the projection head the checkpoint at path holds under name (DSE's contrastive head, §3.1),
	// or nil when the objective writes no head; it fails when the checkpoint lacks a head of that name.
	Head(path, name string) (Head, error)
	// Ensemble combines the members' scores of each query's candidates, [member][query][candidate], into one
	// score per candidate, [query][candidate], as the objective's paper defines an ensemble (MGT §3.2, Eq. 7),
	// or nil when it defines none.
	Ensemble(scores [][][]float64) ([][]float64, error)
}

// TextEncoder embeds texts, one vector each (evaluate.Encoder).
type TextEncoder interface {
	Embed(texts []string) ([][]float32, error)
}

// Head is a trained head read from a checkpoint: Over maps enc's embeddings through it.
type Head interface {
	Over(enc TextEncoder) TextEncoder
}

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
