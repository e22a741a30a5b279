// Command mgtbuckets builds MGT's response pool and segments for an experiment file as a run would and prints
// what each phase took and the memory it peaked at, as one JSON line (see cmd/internal/mgtbucketscmd):
//
//	go run ./cmd/mgtbuckets experiments/mgt_small_cpu.toml
package main

import (
	"os"

	"convrep/cmd/internal/mgtbucketscmd"
)

func main() { os.Exit(mgtbucketscmd.Main(os.Args[1:])) }
