// Command data reads the pretraining corpora and writes them as one JSON-lines file of dialogues, prints how
// much text each holds, or fetches them (convrep data does the same; see cmd/internal/datacmd):
//
//	go run ./cmd/data stats [--data DIR] [--corpora LIST]
//	go run ./cmd/data fetch --to DIR
package main

import (
	"os"

	"convrep/cmd/internal/datacmd"
)

func main() { os.Exit(datacmd.Main(os.Args[1:])) }
