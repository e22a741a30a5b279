package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"convrep/claims"
)

// TestClaimsScriptCoversTheSpec runs scripts/claims.sh --ablations --dry-run and checks its plan against scripts/claims.toml
// and the commands convrep has: the spec is checked before anything runs; every training starts from a
// *_mini_cpu.toml and resumes; every evaluation is a cmd/evaluate task with its flags, on CPU; every model of every
// claim gets result files under runs/claims/CLAIM/eval/MODEL/sN (what cmd/claims report reads; an ablation's models
// of another claim under that claim's folder); checkpoints are
// chosen on validation and Table 2 evaluated on test; and the report is written after each claim.
func TestClaimsScriptCoversTheSpec(t *testing.T) {
	root := repoRoot(t)
	tasks, flags := evaluateTasks(t, root)
	spec, err := claims.ReadSpec(filepath.Join(root, "scripts/claims.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("scripts", "claims.sh"), "--ablations", "--dry-run")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CONVREP_BIN=/nonexistent/bin")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if !strings.HasPrefix(lines[0], "+ /nonexistent/bin/claims check --spec scripts/claims.toml") {
		t.Errorf("first command %q, want the spec checked", lines[0])
	}
	evalDir := regexp.MustCompile(`^runs/claims/([a-z0-9-]+)/eval/([a-z0-9]+)/s[0-9]+/[a-z0-9_-]+\.json$`)
	covered := map[string]bool{}
	var reports int
	for _, line := range lines {
		f, ok := strings.CutPrefix(line, "+ ")
		if !ok {
			t.Fatalf("dry run printed %q, not a command", line)
		}
		args := strings.Fields(f)
		if !strings.HasPrefix(args[0], "/nonexistent/bin/") {
			t.Errorf("%q does not use $CONVREP_BIN", f)
		}
		flag := func(name string) string {
			if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
				return args[i+1]
			}
			return ""
		}
		switch filepath.Base(args[0]) {
		case "train", "data":
			if args[0] == "/nonexistent/bin/data" && (len(args) < 2 || args[1] != "prepare") {
				t.Errorf("%q: the claims run data prepare only", f)
			}
			exp := args[len(args)-1]
			if !strings.HasSuffix(exp, "_mini_cpu.toml") {
				t.Errorf("%q: the claims train only *_mini_cpu.toml experiments", f)
			}
			if _, err := os.Stat(filepath.Join(root, exp)); err != nil {
				t.Errorf("%q: %v", f, err)
			}
			if args[0] == "/nonexistent/bin/train" && !slices.Contains(args, "--resume") {
				t.Errorf("%q does not resume", f)
			}
		case "evaluate":
			checkEvaluate(t, root, args, tasks, flags, true)
			if m := evalDir.FindStringSubmatch(flag("--output")); m != nil {
				covered[m[1]+"/"+m[2]] = true
			}
			switch {
			case args[1] == "select" && flag("--split") != "val":
				t.Errorf("%q chooses checkpoints on %q, want val", f, flag("--split"))
			case args[1] == "response" && flag("--dataset") == "multiwoz" && flag("--split") != "test":
				t.Errorf("%q: MGT's Table 2 is MultiWOZ test", f)
			}
		case "claims":
			if args[1] == "report" {
				reports++
			}
		default:
			t.Errorf("unexpected command %q", f)
		}
	}
	for _, c := range spec.Claims {
		for _, m := range c.Models {
			id := c.ID
			if other, ok := c.Results[m]; ok {
				id = other
			}
			if !covered[id+"/"+m] {
				t.Errorf("claim %s: no evaluation writes runs/claims/%s/eval/%s/sN", c.ID, id, m)
			}
		}
	}
	if reports != len(spec.Claims) {
		t.Errorf("%d reports written, want one after each of the %d claims", reports, len(spec.Claims))
	}
}
