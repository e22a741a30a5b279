// Command convrep is convrep's one program: each job is a subcommand, the same code as the program of the same
// name under cmd/ (cmd/train and convrep train are one), so that `make install` puts a single name on the PATH.
//
//	convrep train experiments/dse_bert_base.toml
//	convrep evaluate suite --model runs/dse_mini_cpu --output-dir runs/eval/dse_mini_cpu
//	convrep help train        (or convrep train --help)
//
// `convrep`, `convrep help` and `convrep --help` list the subcommands.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"convrep/cmd/internal/benchcmd"
	"convrep/cmd/internal/claimscmd"
	"convrep/cmd/internal/datacmd"
	"convrep/cmd/internal/devicecmd"
	"convrep/cmd/internal/embedcmd"
	"convrep/cmd/internal/evaluatecmd"
	"convrep/cmd/internal/servecmd"
	"convrep/cmd/internal/setupcmd"
	"convrep/cmd/internal/traincmd"
)

// command is one subcommand: main runs it on the arguments after its name and returns the exit status; check
// parses them as main would and returns what main would reject, without running anything (the docs' test).
type command struct {
	name, summary string
	main          func(args []string) int
	check         func(args []string) error
}

func commands() []command {
	return []command{
		{"train", "train what an experiment file names: convrep train experiments/dse_mini_cpu.toml",
			func(args []string) int { return traincmd.Main([]string{"train"}, args) }, traincmd.Check},
		{"evaluate", "evaluate a model on the papers' tasks and lay the results side by side", evaluatecmd.Main, evaluatecmd.Check},
		{"embed", "write one embedding per input text with a convrep or HuggingFace model", embedcmd.Main, embedcmd.Check},
		{"serve", "serve embeddings over HTTP: OpenAI's /v1/embeddings, TEI's /embed, Ollama's /api/embed", servecmd.Main, servecmd.Check},
		{"data", "convert or count the pretraining corpora; fetch them and the evaluation sets; prepare an experiment's dataset", datacmd.Main, datacmd.Check},
		{"bench", "time one DSE training step (pairs/s, tokens/s, MFU), or load convrep serve (bench serve)", benchcmd.Main, benchcmd.Check},
		{"claims", "check the papers' claims against the evaluation results and write the report", claimscmd.Main, claimscmd.Check},
		{"device", "run one tiny step through convrep's shim on a GPU (the set-up's last check on a CUDA host)", devicecmd.Command.Main, devicecmd.Command.Check},
		{"setup", "install libtorch when missing and prepare the patched gotch in third_party/gotch", setupcmd.Main, setupcmd.Check},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args (after the program's name) and returns the exit status: the subcommand's, or
// 2 for a command line that names none.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return 0
		}
		c, err := lookup(args[1])
		if err != nil {
			fmt.Fprintf(stderr, "convrep help: %v\n", err)
			return 2
		}
		return c.main([]string{"--help"})
	}
	c, err := lookup(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "convrep: %v\nRun 'convrep --help' for what each does.\n", err)
		return 2
	}
	return c.main(args[1:])
}

// lookup finds the subcommand name; its error names the valid ones.
func lookup(name string) (command, error) {
	var names []string
	for _, c := range commands() {
		if c.name == name {
			return c, nil
		}
		names = append(names, c.name)
	}
	return command{}, fmt.Errorf("unknown command %q; the commands are %s", name, strings.Join(names, ", "))
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: convrep <command> [arguments]\n\n"+
		"Pretraining and evaluation of dialogue representation models on libtorch.\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'convrep help <command>' or 'convrep <command> --help' for its flags and arguments.\n")
}
