// Package shared locates ../shared, the read-only corpora, fixtures and papers that sit beside the repository
// (beside its go.mod). Tests, benchmarks and the demo read them in place; nothing is copied into the repo.
package shared

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dir returns the absolute path of the shared folder: $CONVREP_SHARED when set, else ../shared next to the
// folder holding go.mod, found upwards from the working directory.
func Dir() (string, error) {
	if d := os.Getenv("CONVREP_SHARED"); d != "" {
		return filepath.Abs(d)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			shared := filepath.Join(filepath.Dir(dir), "shared")
			if _, err := os.Stat(shared); err != nil {
				return "", fmt.Errorf("shared data: %s is missing (it holds the fixtures and corpora; set CONVREP_SHARED to use another place)", shared)
			}
			return shared, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("shared data: no go.mod above the working directory")
		}
		dir = parent
	}
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
