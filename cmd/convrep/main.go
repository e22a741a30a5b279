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
	"context"
	"io"
	"os"

	"go.uber.org/zap"

	"convrep/cmd/internal/benchcmd"
	"convrep/cmd/internal/claimscmd"
	"convrep/cmd/internal/datacmd"
	"convrep/cmd/internal/devicecmd"
	"convrep/cmd/internal/embedcmd"
	"convrep/cmd/internal/evaluatecmd"
	"convrep/cmd/internal/servecmd"
	"convrep/cmd/internal/setupcmd"
	"convrep/cmd/internal/traincmd"
	"convrep/internal/cli"
)

// command is one subcommand: main runs it on the arguments after its name and returns the exit status; check
// parses them as main would and returns what main would reject, without running anything (the docs' test).
type command struct {
	main  func(args []string) int
	check func(args []string) error
}

// commands is convrep's table of subcommands.
func commands() cli.Table[command] {
	return cli.Table[command]{
		Name:     "convrep",
		Synopsis: "convrep <command> [arguments]",
		About:    "Pretraining and evaluation of dialogue representation models on libtorch.",
		Footer:   "Run 'convrep help <command>' or 'convrep <command> --help' for its flags and arguments.",
		Entries: []cli.Entry[command]{
			{Name: "train", Summary: "train what an experiment file names: convrep train experiments/dse_mini_cpu.toml",
				Sub: command{func(args []string) int { return traincmd.Main([]string{"train"}, args) }, traincmd.Check}},
			{Name: "evaluate", Summary: "evaluate a model on the papers' tasks and lay the results side by side", Sub: command{evaluatecmd.Main, evaluatecmd.Check}},
			{Name: "embed", Summary: "write one embedding per input text with a convrep or HuggingFace model", Sub: command{embedcmd.Main, embedcmd.Check}},
			{Name: "serve", Summary: "serve embeddings over HTTP: OpenAI's /v1/embeddings, TEI's /embed, Ollama's /api/embed", Sub: command{servecmd.Main, servecmd.Check}},
			{Name: "data", Summary: "convert or count the pretraining corpora; fetch them and the evaluation sets; prepare an experiment's dataset", Sub: command{datacmd.Main, datacmd.Check}},
			{Name: "bench", Summary: "time one DSE training step (pairs/s, tokens/s, MFU), or load convrep serve (bench serve)", Sub: command{benchcmd.Main, benchcmd.Check}},
			{Name: "claims", Summary: "check the papers' claims against the evaluation results and write the report", Sub: command{claimscmd.Main, claimscmd.Check}},
			{Name: "device", Summary: "run one tiny step through convrep's shim on a GPU (the set-up's last check on a CUDA host)", Sub: command{devicecmd.Command.Main, devicecmd.Command.Check}},
			{Name: "setup", Summary: "install libtorch when missing and prepare the patched gotch in third_party/gotch", Sub: command{func(args []string) int { return setup(args).Main(args) }, func(args []string) error { return setup(args).Check(args) }}},
		},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args (after the program's name) and returns the exit status: the subcommand's, or
// 2 for a command line that names none.
func run(args []string, stdout, stderr io.Writer) int {
	return commands().Main(args, stdout, stderr, func(c command, args []string) int { return c.main(args) })
}

// setup is the set-up as a cli.Command, from setupcmd's Parse and Run: cmd/setup runs before the modules are
// there, so setupcmd imports the standard library only and cannot build one itself.
func setup(args []string) cli.Command[setupcmd.Options] {
	return cli.Command[setupcmd.Options]{Name: setupcmd.Name(args), Parse: setupcmd.Parse,
		Run: func(ctx context.Context, o setupcmd.Options, _ *zap.Logger) error { return setupcmd.Run(ctx, o) }}
}
