// Command bench times one DSE training step of a randomly initialised BERT and prints one JSON line (convrep
// bench does the same; see cmd/internal/benchcmd):
//
//	go run ./cmd/bench --device cuda --precision bf16 --layers 12 --hidden 768 --heads 12 --seq-len 32 --batch 512
package main

import (
	"os"

	"convrep/cmd/internal/benchcmd"
)

func main() { os.Exit(benchcmd.Main(os.Args[1:])) }
