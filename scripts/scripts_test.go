// Package scripts holds the reproduction scripts, one per paper (dse.sh, futuretod.sh, dialoguecse.sh, mgt.sh),
// and this test, which checks them without running a model: their syntax, the experiment files they name, and,
// through --dry-run, every command they would run against the commands convrep has.
package scripts

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"convrep/evaluate/suite"
)

var papers = []string{"dse", "futuretod", "dialoguecse", "mgt"}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// evaluateTasks lists cmd/evaluate's tasks (those package suite registers) and the flags its tasks define.
func evaluateTasks(t *testing.T, _ string) (tasks, flags []string) {
	t.Helper()
	for _, task := range suite.All() {
		tasks = append(tasks, task.Name)
		fs := flag.NewFlagSet(task.Name, flag.ContinueOnError)
		task.New().Flags(suite.NewFlags(fs))
		fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f.Name) })
	}
	if len(tasks) < 8 || !slices.Contains(flags, "model") || !slices.Contains(flags, "output") {
		t.Fatalf("could not read cmd/evaluate's tasks (%v) and flags (%v)", tasks, flags)
	}
	return tasks, flags
}

func TestScriptsSyntax(t *testing.T) {
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "scripts/*.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < len(papers)+1 {
		t.Fatalf("scripts: %v, want one per paper and common.sh", files)
	}
	for _, f := range files {
		if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", f, err, out)
		}
		if sc, err := exec.LookPath("shellcheck"); err == nil {
			if out, err := exec.Command(sc, "-x", "-S", "error", f).CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", f, err, out)
			}
		}
	}
	for _, p := range papers {
		path := filepath.Join(root, "scripts", p+".sh")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		st, err := os.Stat(path)
		if err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable", path)
		}
		for _, want := range []string{"#!/usr/bin/env bash\n", "set -euo pipefail\n", "Expected wall time", "one GPU", "--small on CPU", "estimate", "usage: scripts/" + p + ".sh"} {
			if !strings.Contains(src, want) {
				t.Errorf("%s lacks %q", path, want)
			}
		}
	}
}

// TestScriptsNameWhatExists: every experiment file and evaluation task written in a script exists.
func TestScriptsNameWhatExists(t *testing.T) {
	root := repoRoot(t)
	tasks, _ := evaluateTasks(t, root)
	toml := regexp.MustCompile(`experiments/[A-Za-z0-9_.-]+\.toml`)
	evCall := regexp.MustCompile(`(?m)^\s*ev ([a-z-]+) `)
	for _, p := range papers {
		b, err := os.ReadFile(filepath.Join(root, "scripts", p+".sh"))
		if err != nil {
			t.Fatal(err)
		}
		names := toml.FindAllString(string(b), -1)
		if len(names) == 0 {
			t.Errorf("%s.sh names no experiment file", p)
		}
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(root, n)); err != nil {
				t.Errorf("%s.sh names %s: %v", p, n, err)
			}
		}
		calls := evCall.FindAllStringSubmatch(string(b), -1)
		if len(calls) == 0 {
			t.Errorf("%s.sh runs no evaluation", p)
		}
		for _, m := range calls {
			if !slices.Contains(tasks, m[1]) {
				t.Errorf("%s.sh calls evaluate %s, which is not in cmd/evaluate's task table %v", p, m[1], tasks)
			}
		}
	}
}

// TestScriptsDryRun runs every script with --dry-run in each mode and checks each command it would run.
func TestScriptsDryRun(t *testing.T) {
	root := repoRoot(t)
	tasks, flags := evaluateTasks(t, root)
	for _, p := range papers {
		for _, mode := range [][]string{{"--small"}, {}, {"--all", "--gpus", "8"}} {
			small := slices.Contains(mode, "--small")
			gpus := slices.Contains(mode, "--gpus")
			t.Run(p+strings.Join(mode, ""), func(t *testing.T) {
				cmd := exec.Command("bash", append([]string{filepath.Join("scripts", p+".sh"), "--dry-run"}, mode...)...)
				cmd.Dir = root
				cmd.Env = append(os.Environ(), "CONVREP_BIN=/nonexistent/bin")
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
				}
				var trained, evaluated int
				for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					f, ok := strings.CutPrefix(line, "+ ")
					if !ok {
						t.Fatalf("dry run printed %q, not a command", line)
					}
					args := strings.Fields(f)
					switch filepath.Base(args[0]) {
					case "train":
						trained++
						checkTrain(t, root, args, small, gpus)
					case "evaluate":
						evaluated++
						checkEvaluate(t, root, args, tasks, flags, small)
					case "data":
						if len(args) < 2 || args[1] != "prepare" {
							t.Errorf("%q: the scripts run data prepare only", f)
						}
						checkExperiment(t, root, args[len(args)-1], small)
					default:
						t.Errorf("unexpected command %q", f)
					}
					if !strings.HasPrefix(args[0], "/nonexistent/bin/") {
						t.Errorf("%q does not use $CONVREP_BIN", f)
					}
				}
				if trained == 0 || evaluated == 0 {
					t.Errorf("%d training and %d evaluation commands, want both", trained, evaluated)
				}
			})
		}
	}
}

func checkExperiment(t *testing.T, root, path string, small bool) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, path)); err != nil {
		t.Errorf("experiment %s: %v", path, err)
	}
	if isSmall := strings.HasSuffix(path, "_small_cpu.toml"); isSmall != small {
		t.Errorf("experiment %s in a run with small=%v", path, small)
	}
}

func checkTrain(t *testing.T, root string, args []string, small, gpus bool) {
	t.Helper()
	checkExperiment(t, root, args[len(args)-1], small)
	if !slices.Contains(args, "--resume") {
		t.Errorf("%q does not resume", args)
	}
	i := slices.Index(args, "--nproc-per-node")
	switch {
	case gpus && (i < 0 || args[i+1] != "8"):
		t.Errorf("%q with --gpus 8 does not pass --nproc-per-node 8", args)
	case !gpus && i >= 0:
		t.Errorf("%q on one device passes --nproc-per-node", args)
	}
	for j, a := range args[1 : len(args)-1] {
		if a == "--set" && !strings.Contains(args[j+2], "=") {
			t.Errorf("%q: --set %s is not key=value", args, args[j+2])
		}
	}
}

func checkEvaluate(t *testing.T, root string, args, tasks, flags []string, small bool) {
	t.Helper()
	task := args[1]
	if !slices.Contains(tasks, task) {
		t.Errorf("evaluate %s is not a task of cmd/evaluate", task)
	}
	for j, a := range args[2:] {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		if !slices.Contains(flags, name) {
			t.Errorf("%q: cmd/evaluate defines no flag --%s", args, name)
		}
		if name == "model" && strings.HasSuffix(args[j+3], ".toml") {
			checkExperiment(t, root, args[j+3], small)
		}
	}
	if task == "report" {
		return
	}
	want := "cuda"
	if small {
		want = "cpu"
	}
	if i := slices.Index(args, "--device"); i < 0 || args[i+1] != want {
		t.Errorf("%q: want --device %s", args, want)
	}
	if !slices.Contains(args, "--model") {
		t.Errorf("%q names no model", args)
	}
}

// mgt.sh chooses checkpoints as MGT §4.2 does, on validation only: one evaluate select per granularity (top 1)
// and one for the single run (its top N, "Ensemble (N)"); Table 2's four rows are evaluated on test with the
// chosen checkpoints; and no seed member trains with the single dual encoder's seed.
func TestMGTScriptChoosesOnValidation(t *testing.T) {
	root := repoRoot(t)
	for _, c := range []struct {
		mode       []string
		l, top     int
		singleToml string
	}{{[]string{"--small"}, 3, 3, "experiments/mgt_single_small_cpu.toml"}, {nil, 5, 5, "experiments/mgt_single_bert_base.toml"}} {
		t.Run(strings.Join(c.mode, ""), func(t *testing.T) {
			cmd := exec.Command("bash", append([]string{filepath.Join("scripts", "mgt.sh"), "--dry-run"}, c.mode...)...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CONVREP_BIN=/nonexistent/bin")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
			}
			flag := func(args []string, name string) string {
				if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
					return args[i+1]
				}
				return ""
			}
			single, err := os.ReadFile(filepath.Join(root, c.singleToml))
			if err != nil {
				t.Fatal(err)
			}
			singleSeed := regexp.MustCompile(`(?m)^seed = (\d+)`).FindStringSubmatch(string(single))
			if singleSeed == nil {
				t.Fatalf("%s has no seed", c.singleToml)
			}
			var selects, tops []string
			var table2 []string
			seeds := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				args := strings.Fields(strings.TrimPrefix(line, "+ "))
				switch {
				case filepath.Base(args[0]) == "train" && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "objective.member=") }):
					for j, a := range args {
						if s, ok := strings.CutPrefix(a, "seed="); ok && args[j-1] == "--set" {
							if s == singleSeed[1] || seeds[s] {
								t.Errorf("%q: seed %s is the single run's or another member's", line, s)
							}
							seeds[s] = true
						}
					}
				case len(args) > 1 && args[1] == "select":
					if s := flag(args, "--split"); s != "val" {
						t.Errorf("%q chooses on split %q, want val", line, s)
					}
					selects = append(selects, flag(args, "--output"))
					tops = append(tops, flag(args, "--top"))
				case len(args) > 1 && args[1] == "response" && strings.Contains(flag(args, "--output"), "/table2/"):
					if s := flag(args, "--split"); s != "test" || flag(args, "--dataset") != "multiwoz" || flag(args, "--candidates") != "20" {
						t.Errorf("%q: Table 2 is MultiWOZ test, 1 of 20", line)
					}
					table2 = append(table2, line)
				}
			}
			if len(seeds) == 0 {
				t.Error("no seed member trains with a seed of its own")
			}
			if len(selects) != c.l+1 {
				t.Fatalf("%d selections %v, want %d (the single run and each granularity)", len(selects), selects, c.l+1)
			}
			if tops[0] != strconv.Itoa(c.top) || slices.ContainsFunc(tops[1:], func(s string) bool { return s != "1" }) {
				t.Errorf("--top of the selections: %v, want %d for the single run, then 1 per granularity", tops, c.top)
			}
			if len(table2) != 4 {
				t.Fatalf("Table 2 rows: %d, want 4 (single, Ensemble (%d), seeds ensemble, MGT):\n%s", len(table2), c.top, strings.Join(table2, "\n"))
			}
			singleTxt := strings.TrimSuffix(selects[0], ".json") + ".txt"
			for i, want := range []string{"Single dual encoder", fmt.Sprintf("Ensemble (%d)", c.top), "seeds", "MGT"} {
				if !strings.Contains(table2[i], want) {
					t.Errorf("Table 2 row %d: %q, want %q", i+1, table2[i], want)
				}
			}
			for _, i := range []int{0, 1} {
				if !strings.Contains(table2[i], singleTxt) {
					t.Errorf("%q does not take its checkpoints from the single run's selection %s", table2[i], singleTxt)
				}
			}
			for _, sel := range selects[1:] {
				if !strings.Contains(table2[3], strings.TrimSuffix(sel, ".json")+".txt") {
					t.Errorf("the MGT row does not take the checkpoint chosen in %s: %q", sel, table2[3])
				}
			}
		})
	}
}
