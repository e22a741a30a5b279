package claims

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"convrep/internal/settings"
)

// Spec is a claims file (scripts/claims.toml): the claims to check, in report order.
type Spec struct {
	Path   string  `toml:"-"` // the file it was read from, for messages
	Claims []Claim `toml:"claim"`
}

// Claim is one statement of a paper and how to check it.
type Claim struct {
	ID        string            `toml:"id"` // its folder under the runs root
	Title     string            `toml:"title"`
	Statement string            `toml:"statement"`
	Notes     string            `toml:"notes"`
	Models    []string          `toml:"models"` // the rows of the claim's table, in order; folders under eval/
	Labels    map[string]string `toml:"labels"` // optional display names of models
	// Results names, for a model evaluated under another claim, that claim's id: its folder is then
	// <runs>/<claim>/eval/<model>. An ablation lays its variants beside the runs it varies without evaluating
	// them twice.
	Results  map[string]string `toml:"results"`
	Rows     []Row             `toml:"row"`
	Compares []Compare         `toml:"compare"`
}

// Row names one result row of cmd/evaluate (task, dataset, variant, metric): a column of the claim's table.
type Row struct {
	Task    string `toml:"task"`
	Dataset string `toml:"dataset"`
	Variant string `toml:"variant"`
	Metric  string `toml:"metric"`
	Label   string `toml:"label"` // the column header, and the name comparisons use; default Key().String()
}

// Compare is what a claim asserts: Better Relation Worse on Rows (row labels; empty means every row).
type Compare struct {
	Better   string   `toml:"better"`
	Worse    string   `toml:"worse"`
	Relation string   `toml:"relation"` // ">" or ">="
	Rows     []string `toml:"rows"`
}

// Key is the row's key in result files.
func (r Row) Key() Key {
	return Key{Task: r.Task, Dataset: r.Dataset, Variant: r.Variant, Metric: r.Metric}
}

// Name is the row's label, or its key when it has none.
func (r Row) Name() string {
	if r.Label != "" {
		return r.Label
	}
	return r.Key().String()
}

// ModelLabel is a model's display name: its label, or the model itself.
func (c *Claim) ModelLabel(model string) string {
	if l := c.Labels[model]; l != "" {
		return l
	}
	return model
}

// HeadingTitle is the claim's title, or its id when it has none.
func (c *Claim) HeadingTitle() string {
	if c.Title != "" {
		return c.Title
	}
	return c.ID
}

// CompareRows lists the rows a comparison covers, in the claim's row order when it names none.
func (c *Claim) CompareRows(cmp Compare) []Row {
	if len(cmp.Rows) == 0 {
		return c.Rows
	}
	var out []Row
	for _, name := range cmp.Rows {
		for _, r := range c.Rows {
			if r.Name() == name {
				out = append(out, r)
			}
		}
	}
	return out
}

// Relations are the relations a comparison may assert.
var Relations = []string{">", ">="}

// ReadSpec reads and checks a claims file. Unknown keys, a malformed file and every problem Validate finds
// are errors that name the file (and the line, where the decoder tells it).
func ReadSpec(path string) (*Spec, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read claims spec: %w", err)
	}
	return ParseSpec(path, src)
}

// ParseSpec decodes src, read from path, and checks it as ReadSpec does.
func ParseSpec(path string, src []byte) (*Spec, error) {
	var s Spec
	md, err := toml.NewDecoder(bytes.NewReader(src)).Decode(&s)
	if err != nil {
		return nil, settings.DecodeError(path, err)
	}
	var unknown []string
	var reported []toml.Key
	for _, k := range md.Undecoded() {
		if slices.ContainsFunc(reported, func(p toml.Key) bool { return hasPrefix(k, p) }) {
			continue // a key inside an unknown table: the table is reported
		}
		reported = append(reported, k)
		unknown = append(unknown, fmt.Sprintf("%s: unknown key %q", place(path, settings.KeyLine(src, k)), k.String()))
	}
	if len(unknown) > 0 {
		return nil, errors.New(strings.Join(unknown, "\n"))
	}
	s.Path = path
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate checks that the spec can be reported: at least one claim; ids unique and safe as folder names;
// each claim with a statement, models (unique, safe as folder names), rows (complete, unique) and
// comparisons whose models, relation and rows exist. It lists every problem, one a line, each naming the
// file, the claim and the entry.
func (s *Spec) Validate() error {
	var problems []string
	add := func(where, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s%s", s.Path, where, fmt.Sprintf(format, args...)))
	}
	if len(s.Claims) == 0 {
		add("", "no [[claim]] entries")
	}
	ids := map[string]int{}
	for i := range s.Claims {
		c := &s.Claims[i]
		where := fmt.Sprintf("claim %d", i+1)
		if c.ID != "" {
			where = fmt.Sprintf("claim %q", c.ID)
		}
		where += ": "
		switch {
		case c.ID == "":
			add(where, "id is missing")
		case !safeName.MatchString(c.ID):
			add(where, "id %q is not a safe folder name (letters, digits, '.', '_', '-', starting with a letter or digit)", c.ID)
		case ids[c.ID] > 0:
			add(where, "id %q is used by claim %d too", c.ID, ids[c.ID])
		}
		if ids[c.ID] == 0 {
			ids[c.ID] = i + 1
		}
		if strings.TrimSpace(c.Statement) == "" {
			add(where, "statement is missing")
		}
		validateModels(c, where, add)
		validateRows(c, where, add)
		validateCompares(c, where, add)
	}
	for i := range s.Claims {
		c := &s.Claims[i]
		for _, m := range slices.Sorted(maps.Keys(c.Results)) {
			other := c.Results[m]
			switch {
			case !slices.Contains(c.Models, m):
				add(fmt.Sprintf("claim %q: ", c.ID), "results names %q, which is not one of models (%s)", m, strings.Join(c.Models, ", "))
			case other == c.ID || ids[other] == 0:
				add(fmt.Sprintf("claim %q: ", c.ID), "results: model %q is evaluated under claim %q, which is not another claim of the spec", m, other)
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

func validateModels(c *Claim, where string, add func(where, format string, args ...any)) {
	if len(c.Models) == 0 {
		add(where, "models is empty")
	}
	seen := map[string]bool{}
	for _, m := range c.Models {
		switch {
		case !safeName.MatchString(m):
			add(where, "model %q is not a safe folder name (letters, digits, '.', '_', '-', starting with a letter or digit)", m)
		case seen[m]:
			add(where, "model %q is listed twice", m)
		}
		seen[m] = true
	}
	for _, m := range slices.Sorted(maps.Keys(c.Labels)) {
		if !seen[m] {
			add(where, "labels names %q, which is not one of models (%s)", m, strings.Join(c.Models, ", "))
		}
	}
}

func validateRows(c *Claim, where string, add func(where, format string, args ...any)) {
	if len(c.Rows) == 0 {
		add(where, "no [[claim.row]] entries")
	}
	names := map[string]int{}
	keys := map[Key]int{}
	for j, r := range c.Rows {
		at := fmt.Sprintf("%srow %d: ", where, j+1)
		for _, f := range []struct{ name, value string }{{"task", r.Task}, {"dataset", r.Dataset}, {"metric", r.Metric}} {
			if f.value == "" {
				add(at, "%s is missing", f.name)
			}
		}
		if k := names[r.Name()]; k > 0 {
			add(at, "label %q is row %d's too", r.Name(), k)
		} else {
			names[r.Name()] = j + 1
		}
		if k := keys[r.Key()]; k > 0 {
			add(at, "%s is row %d already", r.Key(), k)
		} else {
			keys[r.Key()] = j + 1
		}
	}
}

func validateCompares(c *Claim, where string, add func(where, format string, args ...any)) {
	if len(c.Compares) == 0 {
		add(where, "no [[claim.compare]] entries: the claim asserts nothing")
	}
	for j, cmp := range c.Compares {
		at := fmt.Sprintf("%scompare %d: ", where, j+1)
		for _, f := range []struct{ name, value string }{{"better", cmp.Better}, {"worse", cmp.Worse}} {
			switch {
			case f.value == "":
				add(at, "%s is missing", f.name)
			case !slices.Contains(c.Models, f.value):
				add(at, "%s %q is not one of models (%s)", f.name, f.value, strings.Join(c.Models, ", "))
			}
		}
		if cmp.Better != "" && cmp.Better == cmp.Worse {
			add(at, "better and worse are both %q", cmp.Better)
		}
		if !slices.Contains(Relations, cmp.Relation) {
			add(at, "relation %q is not one of \">\", \">=\"", cmp.Relation)
		}
		seen := map[string]bool{}
		for _, name := range cmp.Rows {
			switch {
			case seen[name]:
				add(at, "rows names %q twice", name)
			case !slices.ContainsFunc(c.Rows, func(r Row) bool { return r.Name() == name }):
				add(at, "rows names %q, which is no row's label (%s)", name, strings.Join(rowNames(c.Rows), ", "))
			}
			seen[name] = true
		}
	}
}

// safeName is a folder name that stays one path element and is no hidden or relative name.
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func rowNames(rows []Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%q", r.Name())
	}
	return out
}

// place is "path:line", or the path alone when the line is unknown (0).
func place(path string, line int) string {
	if line == 0 {
		return path
	}
	return fmt.Sprintf("%s:%d", path, line)
}

func hasPrefix(k, prefix toml.Key) bool {
	return len(k) > len(prefix) && slices.Equal(k[:len(prefix)], prefix)
}
