package main

// The package layout holds: every package of the module is in docs/design.md's layout table, and no import runs
// from a lower floor up, against the floors that docs/design.md lists.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "convrep"

// packages lists the module's packages (third_party's copy of gotch left out) with their imports of other
// packages of the module, from `go list -deps`.
func packages(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		p, ok := inModule(f[0])
		if !ok {
			continue
		}
		var imports []string
		for _, i := range f[1:] {
			if q, ok := inModule(i); ok {
				imports = append(imports, q)
			}
		}
		pkgs[p] = imports
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages of the module: the listing is broken", len(pkgs))
	}
	return pkgs
}

// inModule is an import path's path inside the module, ok false for the standard library, other modules and
// third_party.
func inModule(importPath string) (string, bool) {
	p, ok := strings.CutPrefix(importPath, module+"/")
	if !ok || strings.HasPrefix(p, "third_party/") {
		return "", false
	}
	return p, true
}

// designSection returns the lines of a Markdown document's section under the heading "## name".
func designSection(t *testing.T, doc, name string) []string {
	t.Helper()
	var lines []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "## ") {
			in = strings.TrimSpace(l[3:]) == name
			continue
		}
		if in {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("docs/design.md has no section %q", name)
	}
	return lines
}

var codeRe = regexp.MustCompile("`([^`]+)`")

// tableRows returns the cells of a Markdown table's rows (header and rule left out).
func tableRows(lines []string) [][]string {
	var rows [][]string
	for _, l := range lines {
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	if len(rows) > 0 {
		rows = rows[1:] // the header
	}
	return rows
}

func designDoc(t *testing.T, root string) string {
	b, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// floor is one floor of docs/design.md: its number and the patterns of its packages (a path, or a folder and
// everything under it as path/...).
type floor struct {
	n        int
	patterns []string
}

// floors reads docs/design.md's floors table: "| 0: name | `a`, `b/...` |".
func floors(t *testing.T, doc string) []floor {
	t.Helper()
	var fs []floor
	for _, cells := range tableRows(designSection(t, doc, "Floors")) {
		num, _, _ := strings.Cut(cells[0], ":")
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil || len(cells) < 2 {
			t.Fatalf("floors table: row %q does not start with a floor number", cells)
		}
		f := floor{n: n}
		for _, m := range codeRe.FindAllStringSubmatch(cells[1], -1) {
			f.patterns = append(f.patterns, m[1])
		}
		fs = append(fs, f)
	}
	return fs
}

// floorOf is the floor of package p: that of the most specific pattern matching it (an exact path beats any
// folder pattern, a longer folder beats a shorter one), -1 when none does.
func floorOf(fs []floor, p string) (n int, pattern string) {
	n, best := -1, -1
	for _, f := range fs {
		for _, pat := range f.patterns {
			score := -1
			if dir, ok := strings.CutSuffix(pat, "/..."); ok {
				if p == dir || strings.HasPrefix(p, dir+"/") {
					score = len(dir)
				}
			} else if p == pat {
				score = 1 << 20
			}
			if score > best {
				n, best, pattern = f.n, score, pat
			}
		}
	}
	return n, pattern
}

func TestImportsRespectFloors(t *testing.T) {
	root := repoRoot(t)
	fs := floors(t, designDoc(t, root))
	pkgs := packages(t, root)
	var names []string
	for p := range pkgs {
		names = append(names, p)
	}
	slices.Sort(names)
	up := 0
	onFloor := map[int][]string{}
	for _, p := range names {
		n, _ := floorOf(fs, p)
		if n < 0 {
			t.Errorf("%s is on no floor of docs/design.md", p)
			continue
		}
		onFloor[n] = append(onFloor[n], p)
		for _, i := range pkgs[p] {
			if m, pat := floorOf(fs, i); m > n {
				up++
				t.Errorf("%s (floor %d) imports %s (floor %d, by `%s`): an import from a lower floor up", p, n, i, m, pat)
			}
		}
	}
	for _, f := range fs {
		t.Logf("floor %d: %s", f.n, strings.Join(onFloor[f.n], " "))
	}
	t.Logf("%d packages on %d floors, %d imports running up", len(names), len(fs), up)
}

// The floor test fails on an arrow back up.
func TestFloorOf(t *testing.T) {
	fs := []floor{{0, []string{"safetensors", "internal/cli/..."}}, {1, []string{"internal/torch", "models/..."}}, {2, []string{"models/hub"}}}
	for _, c := range []struct {
		p    string
		want int
	}{{"safetensors", 0}, {"internal/cli", 0}, {"internal/cli/progress", 0}, {"models", 1}, {"models/sbert", 1}, {"models/hub", 2}, {"trainer", -1}, {"internal/clix", -1}} {
		if got, _ := floorOf(fs, c.p); got != c.want {
			t.Errorf("floorOf(%s) = %d, want %d", c.p, got, c.want)
		}
	}
}

func TestDesignListsEveryPackage(t *testing.T) {
	root := repoRoot(t)
	listed := map[string]bool{}
	for _, cells := range tableRows(designSection(t, designDoc(t, root), "Layout")) {
		for _, m := range codeRe.FindAllStringSubmatch(cells[0], -1) {
			listed[strings.TrimSuffix(m[1], "/")] = true
		}
	}
	var missing []string
	for p := range packages(t, root) {
		if !listed[p] {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("docs/design.md's layout table does not name %d packages:\n%s", len(missing), fmt.Sprint(strings.Join(missing, "\n")))
	}
}
