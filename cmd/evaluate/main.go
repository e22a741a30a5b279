// Command evaluate runs convrep's evaluation suite (DSE §4.2 and Appendix B) on any model convrep can load
// (convrep evaluate does the same; see cmd/internal/evaluatecmd):
//
//	go run ./cmd/evaluate intent --model runs/dse_small_cpu --dataset clinc150 --shots 1,5 --seeds 0-9 --output out/clinc.json
//	go run ./cmd/evaluate suite  --model experiments/dse_small_cpu.toml --output-dir out/untrained
package main

import (
	"os"

	"convrep/cmd/internal/evaluatecmd"
)

func main() { os.Exit(evaluatecmd.Main(os.Args[1:])) }
