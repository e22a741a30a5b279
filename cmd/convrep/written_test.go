package main

// What convrep writes for its user to run (a run folder's README, a model card) is checked as the docs are:
// every command line is `convrep …`, runnable with the installed program, and parses with the command's own
// flags; none is `go run ./cmd/…`, which needs the source tree.

import (
	"strings"
	"testing"

	"convrep/modelcard"
)

func TestWrittenInstructionsAreConvrepCommands(t *testing.T) {
	run := modelcard.Run{Name: "dse_support", ExperimentFile: "dse_support.toml", OutputDir: "runs/dse_support",
		Checkpoints: []string{"step-000000080.safetensors"}, Done: true, EventFile: "events.out.tfevents.1.h.convrep"}
	card := modelcard.Card{Name: "dse_support", Objective: "dse", Pooling: "mean", MaxLength: 32, ExperimentFile: "dse_support.toml",
		Experiment: "name = \"dse_support\""}
	checks := goRunChecks()
	for name, md := range map[string]string{"run folder README": run.Markdown(), "model card": card.Markdown()} {
		commands := 0
		for _, s := range snippets(md) {
			prog, args, ok, err := commandLine(s.text)
			if !ok {
				continue
			}
			commands++
			if err != nil {
				t.Errorf("%s:%d: %v\n\t%s", name, s.line, err, s.text)
				continue
			}
			if prog != "convrep" {
				t.Errorf("%s:%d: %q is not a convrep command line\n\t%s", name, s.line, prog, s.text)
				continue
			}
			if err := checks[prog](forParsing(args)); err != nil {
				t.Errorf("%s:%d: %v\n\t%s", name, s.line, err, s.text)
			}
		}
		if commands == 0 {
			t.Errorf("%s shows no command line: %s", name, md)
		}
		if strings.Contains(md, "go run") {
			t.Errorf("%s still says go run:\n%s", name, md)
		}
	}
}
