// Command data reads the pretraining corpora and writes them as one JSON-lines file of dialogues, prints how
// much text each holds, or fetches them; or builds an experiment's dataset ahead of its run (convrep data does
// the same; see cmd/internal/datacmd):
//
//	go run ./cmd/data stats [--data DIR] [--corpora LIST]
//	go run ./cmd/data fetch --to DIR
//	go run ./cmd/data prepare experiments/mgt_small_cpu.toml
package main

import (
	"os"

	"convrep/cmd/internal/datacmd"
)

func main() { os.Exit(datacmd.Main(os.Args[1:])) }
