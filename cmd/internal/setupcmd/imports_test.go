package setupcmd

import (
	"os/exec"
	"strings"
	"testing"
)

// The set-up runs before anything else exists: offline it is built with `go run -mod=mod` from a bundle whose
// modules it has not yet unpacked into vendor/ (Makefile, setup), so it may import the standard library and
// its own packages only (internal/build/libtorch, internal/build/gotchpatch, internal/build/offline). A module dependency
// breaks the offline set-up on a GPU host, where nothing else can fetch it (it
// did on 2026-11-27, through internal/atomicfile's golang.org/x/sys).
func TestSetupImportsTheStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "convrep/cmd/setup").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{"convrep/cmd/setup": true, "convrep/cmd/internal/setupcmd": true,
		"convrep/internal/build/libtorch": true, "convrep/internal/build/gotchpatch": true, "convrep/internal/build/offline": true}
	for _, p := range strings.Fields(string(out)) {
		if !allowed[p] {
			t.Errorf("cmd/setup depends on %s: the offline set-up cannot build it before vendor/ exists", p)
		}
	}
}
