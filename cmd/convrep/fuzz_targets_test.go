package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fuzzLine is one line of the Makefile's fuzz target: go test -fuzz '^FuzzX$$' ... ./pkg.
type fuzzLine struct {
	line int // 1-based, in the Makefile
	fn   string
	pkg  string // as written, ./models/hub
}

var (
	fuzzFlagRe = regexp.MustCompile(`-fuzz[= ]'\^(Fuzz\w*)\$\$'`)
	fuzzPkgRe  = regexp.MustCompile(`\s(\./\S*)\s*$`)
)

// fuzzTargetLines reads the recipe of the fuzz target of a Makefile: one fuzzLine per line that runs -fuzz, and
// a problem for each recipe line that does not read as one (a fuzz test named otherwise, no ./package at its end).
func fuzzTargetLines(makefile string) (lines []fuzzLine, problems []string) {
	in := false
	for i, l := range strings.Split(makefile, "\n") {
		if !in {
			in = strings.HasPrefix(l, "fuzz:")
			continue
		}
		if !strings.HasPrefix(l, "\t") {
			break // the recipe ends at the first line without a tab
		}
		f, p := fuzzFlagRe.FindStringSubmatch(l), fuzzPkgRe.FindStringSubmatch(l)
		if f == nil || p == nil {
			problems = append(problems, fmt.Sprintf("Makefile:%d: not a line go test -fuzz '^FuzzX$$' ... ./package: %s", i+1, strings.TrimSpace(l)))
			continue
		}
		lines = append(lines, fuzzLine{line: i + 1, fn: f[1], pkg: p[1]})
	}
	return lines, problems
}

var fuzzFuncRe = regexp.MustCompile(`(?m)^func (Fuzz\w*)\(`)

// fuzzFuncs lists the fuzz tests of the package in dir (its _test.go files), by name.
func fuzzFuncs(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, m := range fuzzFuncRe.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
	}
	return out, nil
}

// Every line of make fuzz names a fuzz test that its package holds: a moved or renamed one (FuzzReadTexts went
// from cmd/embed to cmd/internal/embedcmd) would otherwise fuzz nothing, and go test says nothing of it.
func TestMakeFuzzNamesFuzzTests(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	lines, problems := fuzzTargetLines(string(b))
	for _, p := range problems {
		t.Error(p)
	}
	if len(lines) == 0 {
		t.Fatal("the Makefile's fuzz target runs no fuzz test: the parse is broken")
	}
	listed := map[string]bool{}
	for _, l := range lines {
		dir := filepath.Join(root, filepath.FromSlash(l.pkg))
		funcs, err := fuzzFuncs(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !funcs[l.fn] {
			t.Errorf("Makefile:%d: %s holds no func %s( in a _test.go file", l.line, l.pkg, l.fn)
		}
		listed[filepath.ToSlash(filepath.Clean(l.pkg))+"."+l.fn] = true
	}
	// And the other way: every fuzz test of the tree is in make fuzz ("every fuzz target", as its comment says).
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata" ||
				d.Name() == "third_party" || d.Name() == "vendor" || d.Name() == "runs") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		for _, m := range fuzzFuncRe.FindAllStringSubmatch(string(src), -1) {
			if !listed[filepath.ToSlash(rel)+"."+m[1]] {
				t.Errorf("%s: %s is not fuzzed by make fuzz (add a line to the Makefile's fuzz target)", filepath.ToSlash(filepath.Join(rel, filepath.Base(p))), m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFuzzTargetLines(t *testing.T) {
	mk := strings.Join([]string{
		"# comment",   // 1
		"fuzz: setup", // 2
		"\t$(GO) test -run XXX -fuzz '^FuzzA$$' -fuzztime 60s ./a", // 3
		"\t$(GO) test -run XXX -fuzz '^FuzzB$$' -parallel 1 ./b/c", // 4
		"\t$(GO) test -run XXX -fuzz 'FuzzC' ./c",                  // 5
		"",                                  // 6
		"other:",                            // 7
		"\t$(GO) test -fuzz '^FuzzD$$' ./d", // 8
	}, "\n")
	lines, problems := fuzzTargetLines(mk)
	want := []fuzzLine{{3, "FuzzA", "./a"}, {4, "FuzzB", "./b/c"}}
	if len(lines) != len(want) || lines[0] != want[0] || lines[1] != want[1] {
		t.Errorf("lines %+v, want %+v", lines, want)
	}
	if len(problems) != 1 || !strings.HasPrefix(problems[0], "Makefile:5: ") {
		t.Errorf("problems %q, want one of line 5", problems)
	}
}
