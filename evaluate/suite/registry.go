package suite

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"
)

// A Task is one evaluation as the evaluate command runs it. Each task is one file of this package that
// registers itself (Register, in an init function): its name, what it says of itself, the data it reads, and
// its options, a typed struct that declares its own flags and runs the task. The evaluate command
// (cmd/internal/evaluatecmd) lists, parses and runs whatever is registered.
type Task struct {
	Name     string // evaluate NAME
	Section  string // where the task list shows it: Similarity, FineTuning or Results
	Summary  string // one line, in the task list
	Synopsis string // the command line after the name, in --help
	About    string // what the task does, in --help
	Data     string // the evaluation sets or files it reads, in --help
	// New returns the task's options, each field at its zero value; Flags sets the defaults.
	New func() Options
}

// Options are a task's settings, typed: the library's API (fill the struct and call Run) and, through
// Flags, the command line's.
type Options interface {
	// Flags declares the options' flags on f, each writing into a field, with its default and help.
	Flags(f *Flags)
	// Run runs the task with the options.
	Run(ctx context.Context, log *zap.Logger) error
}

// The sections of the task list, in the order it shows them.
const (
	Similarity = "similarity-based tasks (no training)"
	FineTuning = "fine-tuning tasks"
	Results    = "results"
)

var sections = []string{Similarity, FineTuning, Results}

var registry struct {
	mu    sync.RWMutex
	tasks []Task
}

// Register adds a task to the suite. A task without a name, a known section or options, or with a name
// already taken, is a mistake in this package: Register panics when the package initialises, so that any
// test of it finds the mistake.
func Register(t Task) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	switch {
	case t.Name == "" || t.New == nil || t.Summary == "":
		panic(fmt.Sprintf("suite.Register: task %q needs a name, a summary and options", t.Name))
	case !slices.Contains(sections, t.Section):
		panic(fmt.Sprintf("suite.Register: task %q: unknown section %q", t.Name, t.Section))
	case slices.ContainsFunc(registry.tasks, func(o Task) bool { return o.Name == t.Name }):
		panic(fmt.Sprintf("suite.Register: task %q registered twice", t.Name))
	}
	registry.tasks = append(registry.tasks, t)
}

// All returns the registered tasks by section, then by name.
func All() []Task {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	out := slices.Clone(registry.tasks)
	slices.SortFunc(out, func(a, b Task) int {
		if d := slices.Index(sections, a.Section) - slices.Index(sections, b.Section); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Lookup returns the task registered under name.
func Lookup(name string) (Task, bool) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	i := slices.IndexFunc(registry.tasks, func(t Task) bool { return t.Name == name })
	if i < 0 {
		return Task{}, false
	}
	return registry.tasks[i], true
}

// Flags is a task's flag set as its options declare their flags. Beside the flag package's own kinds, a flag
// may be read into a typed field once the command line has parsed (Parsed), and options may finish
// themselves from what was given (Then); Finish runs both, in the order declared.
type Flags struct {
	*flag.FlagSet
	then []func(given func(name string) bool) error
	args *[]string
}

// NewFlags wraps fs, for a task's Options.Flags.
func NewFlags(fs *flag.FlagSet) *Flags { return &Flags{FlagSet: fs} }

// Parsed declares a flag written as text (--shots 1,5) that read turns into a typed field once the command line
// has parsed; its help shows the text default as a string flag's does.
func (f *Flags) Parsed(name, value, usage string, read func(string) error) {
	s := f.String(name, value, usage)
	f.Then(func(func(string) bool) error { return read(*s) })
}

// Then adds a step that finishes the options once the command line has parsed; given says whether a flag was
// on the command line.
func (f *Flags) Then(step func(given func(name string) bool) error) { f.then = append(f.then, step) }

// Args declares that the task takes positional arguments, read into dst; without it, any is an error.
func (f *Flags) Args(dst *[]string) { f.args = dst }

// SetArgs takes the positional arguments left after parsing: an error where the task takes none.
func (f *Flags) SetArgs(positional []string) error {
	if f.args == nil {
		if len(positional) > 0 {
			return fmt.Errorf("unexpected arguments %q (see --help)", strings.Join(positional, " "))
		}
		return nil
	}
	*f.args = positional
	return nil
}

// Finish runs the steps that finish the options once the command line has parsed.
func (f *Flags) Finish() error {
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for _, step := range f.then {
		if err := step(func(name string) bool { return given[name] }); err != nil {
			return err
		}
	}
	return nil
}

// SetDefault gives a flag declared earlier (by Common's flags) another default for one task, in its value and
// in --help.
func (f *Flags) SetDefault(name, value string) {
	fl := f.Lookup(name)
	if fl == nil {
		panic(fmt.Sprintf("suite: no flag --%s to set a default for", name))
	}
	if err := fl.Value.Set(value); err != nil {
		panic(fmt.Sprintf("suite: default %q of --%s: %v", value, name, err))
	}
	fl.DefValue = value
}
