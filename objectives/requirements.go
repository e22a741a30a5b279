package objectives

import (
	"fmt"
	"slices"
	"strings"

	"convrep/models"
)

// Requirements are what an objective needs of the backbone. The trainer reads them by the objective's name
// before it builds anything, since a head or a token cannot be bolted on cheaply once the model exists: it
// adds SpecialTokens to the tokenizer (growing the word embeddings, and the MLM head's bias, to the new
// vocabulary) and builds or loads the model with Heads.
type Requirements struct {
	// Heads the model must have; an MLM loss needs Heads.MLM (loaded from the checkpoint when it has one,
	// else initialised).
	Heads models.Heads
	// SpecialTokens are added to the tokenizer as special tokens, in this order (e.g. the role tokens
	// [USR] and [SYS] of datasets.RoleTokens); tokens the tokenizer has already keep their ids.
	SpecialTokens []string
}

// merge adds o's heads and tokens to r.
func (r Requirements) merge(o Requirements) Requirements {
	r.Heads.Pooler = r.Heads.Pooler || o.Heads.Pooler
	r.Heads.MLM = r.Heads.MLM || o.Heads.MLM
	r.Heads.NSP = r.Heads.NSP || o.Heads.NSP
	r.SpecialTokens = slices.Clone(r.SpecialTokens)
	for _, t := range o.SpecialTokens {
		if !slices.Contains(r.SpecialTokens, t) {
			r.SpecialTokens = append(r.SpecialTokens, t)
		}
	}
	return r
}

// Require records what the objective registered (or to be registered) under name needs; calls add up.
// Call it from the same init function as Register. An empty name or token is refused like a bad
// registration: the error is returned and also reported by New.
func Require(name string, r Requirements) error { return builtin.require(name, r) }

// RequirementsOf returns what the objective name needs; the zero value (no head, no token) when it
// recorded nothing, as DSE.
func RequirementsOf(name string) Requirements { return builtin.requirements(name) }

func (g *registry) require(name string, r Requirements) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := strings.ToLower(strings.TrimSpace(name))
	var err error
	if key == "" {
		err = fmt.Errorf("objectives: require: empty objective name")
	}
	for _, t := range r.SpecialTokens {
		if strings.TrimSpace(t) == "" && err == nil {
			err = fmt.Errorf("objectives: require %q: an empty special token", name)
		}
	}
	if err != nil {
		g.refused = append(g.refused, err)
		return err
	}
	g.needs[key] = g.needs[key].merge(r)
	return nil
}

func (g *registry) requirements(name string) Requirements {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.needs[strings.ToLower(strings.TrimSpace(name))].merge(Requirements{})
}
