// Command claims checks papers' claims against the results cmd/evaluate wrote and writes the verdicts as a
// report (convrep claims does the same; see cmd/internal/claimscmd):
//
//	go run ./cmd/claims check  --spec scripts/claims.toml
//	go run ./cmd/claims report --spec scripts/claims.toml --runs runs/claims --output runs/claims/report.md
package main

import (
	"os"

	"convrep/cmd/internal/claimscmd"
)

func main() { os.Exit(claimscmd.Main(os.Args[1:])) }
