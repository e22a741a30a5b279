package objectives

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"convrep/models"
)

// Parser reads an objective's [objective] table (without its name) strictly: a key it does not know is an
// error naming the key, so a typo cannot silently fall back to a default.
type Parser func(s Settings) (Config, error)

// Paper is the paper an objective comes from, as a trained model's card cites it.
type Paper struct {
	Title string // with its authors: "Learning Dialogue Representations from Consecutive Utterances (Zhou et al.)"
	Venue string // "NAACL 2022"
}

// registry maps lower-case names to parsers and papers. A refused registration is kept and reported by every
// later Parse, since it usually happens in an init function that has no caller to return an error to.
type registry struct {
	mu      sync.RWMutex
	parsers map[string]Parser
	papers  map[string]Paper
	refused []error
}

var builtin = &registry{parsers: map[string]Parser{}, papers: map[string]Paper{}}

// Register makes an objective available under name (matched case-insensitively), citing paper (Paper{} for
// none). An empty name, a nil parser or a name already taken is refused: the error is returned and also
// reported by Parse.
func Register(name string, paper Paper, p Parser) error { return builtin.register(name, paper, p) }

// PaperOf is the paper the objective name registered with; false for an unknown name or one that cites none.
func PaperOf(name string) (Paper, bool) {
	builtin.mu.RLock()
	defer builtin.mu.RUnlock()
	p, ok := builtin.papers[strings.ToLower(strings.TrimSpace(name))]
	return p, ok && p.Title != ""
}

// Parse reads an experiment's [objective] table: name picks the objective, which reads the other keys.
func Parse(table map[string]any) (Config, error) { return builtin.parse(table) }

// Names lists the registered objectives, sorted.
func Names() []string { return builtin.names() }

func (r *registry) register(name string, paper Paper, p Parser) error {
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
		r.papers[key] = paper
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
