// Package shared locates the shared folder: the read-only corpora, evaluation sets, models, fixtures and papers
// that sit beside the repository as ../shared. Commands read their defaults from it, experiment files name it
// as ${CONVREP_SHARED}, and tests, benchmarks and the demo read it in place; nothing is copied into the repo.
package shared

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Env is the environment variable that names the shared folder.
const Env = "CONVREP_SHARED"

// Dir returns the absolute path of the shared folder: $CONVREP_SHARED when set; else ../shared from the working
// directory when it exists (a clone, run from its root). A test binary, which runs in its package's folder,
// falls back to the ../shared beside the module's go.mod; a command never looks for go.mod.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("shared folder: %w", err)
	}
	return find(os.Getenv(Env), wd, testing.Testing())
}

// find is Dir for a given $CONVREP_SHARED, working directory, and whether the go.mod lookup of tests applies.
func find(env, wd string, inTest bool) (string, error) {
	if env != "" {
		d, err := filepath.Abs(env)
		if err != nil {
			return "", fmt.Errorf("shared folder: %s=%s: %w", Env, env, err)
		}
		if !isDir(d) {
			return "", fmt.Errorf("shared folder: %s=%s is not a folder", Env, env)
		}
		return d, nil
	}
	beside := filepath.Join(filepath.Dir(wd), "shared")
	if isDir(beside) {
		return beside, nil
	}
	if inTest {
		if d, err := besideModule(wd); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("shared folder: %s is not set and there is no ../shared beside the working directory %s; "+
		"set %s to the folder holding data/ and models/ (or run from the root of a clone)", Env, wd, Env)
}

// besideModule is the shared folder beside the folder holding go.mod, found upwards from dir (tests only).
func besideModule(dir string) (string, error) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(filepath.Dir(dir), "shared")
			if !isDir(d) {
				return "", fmt.Errorf("shared folder: %s is missing", d)
			}
			return d, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("shared folder: no go.mod above the working directory")
		}
		dir = parent
	}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Path joins parts under the shared folder.
func Path(parts ...string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{d}, parts...)...), nil
}

// TB is the part of testing.TB that MustPath needs.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// MustPath is Path for tests: a missing shared folder fails the test, never skips it.
func MustPath(t TB, parts ...string) string {
	t.Helper()
	p, err := Path(parts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
