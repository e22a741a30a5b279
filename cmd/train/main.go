// Command train runs one experiment file of experiments/ (convrep train does the same; see
// cmd/internal/traincmd):
//
//	go run ./cmd/train experiments/dse_bert_base.toml
//	go run ./cmd/train --set train.batch_size=256 --set train.lr=5e-6 experiments/dse_bert_base.toml
//	go run ./cmd/train --resume experiments/dse_small_cpu.toml
//	go run ./cmd/train --nproc-per-node 8 experiments/dse_bert_base.toml
package main

import (
	"os"

	"convrep/cmd/internal/traincmd"
)

func main() { os.Exit(traincmd.Main(nil, os.Args[1:])) }
