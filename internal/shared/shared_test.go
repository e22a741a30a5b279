package shared

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shared folder is $CONVREP_SHARED, else ../shared from the working directory; go.mod is looked for only
// in a test binary, and a folder that is not there is an error that says to set CONVREP_SHARED.
func TestFind(t *testing.T) {
	tmp := t.TempDir()
	mkdir := func(parts ...string) string {
		p := filepath.Join(append([]string{tmp}, parts...)...)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	own := mkdir("elsewhere", "mine")
	clone := mkdir("clone")
	sharedDir := mkdir("shared")
	pkg := mkdir("clone", "experiment")
	if err := os.WriteFile(filepath.Join(clone, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lone := mkdir("lone", "work")
	notDir := filepath.Join(tmp, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, env, wd string
		inTest        bool
		want, err     string
	}{
		{name: "the variable wins", env: own, wd: clone, want: own},
		{name: "the variable, relative", env: "../shared", wd: clone, want: sharedDir},
		{name: "../shared from the working directory", wd: clone, want: sharedDir},
		{name: "a package folder of a command: no go.mod lookup", wd: pkg, err: "CONVREP_SHARED is not set"},
		{name: "a package folder of a test: beside go.mod", wd: pkg, inTest: true, want: sharedDir},
		{name: "nowhere", wd: lone, inTest: true, err: "set CONVREP_SHARED"},
		{name: "the variable names a file", env: notDir, wd: clone, err: "is not a folder"},
		{name: "the variable names nothing", env: filepath.Join(tmp, "none"), wd: clone, err: "is not a folder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" && !filepath.IsAbs(c.env) {
				t.Chdir(c.wd) // a relative $CONVREP_SHARED is taken from the working directory
			}
			got, err := find(c.env, c.wd, c.inTest)
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("got %q, %v; want an error mentioning %q", got, err, c.err)
			case c.err == "" && (err != nil || got != c.want):
				t.Errorf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
