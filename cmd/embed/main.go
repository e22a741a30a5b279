// Command embed writes one embedding per input text with a convrep or HuggingFace model (convrep embed does the
// same; see cmd/internal/embedcmd):
//
//	go run ./cmd/embed --model DIR_OR_NAME [--pooling mean|cls] --max-length N --input texts.txt|texts.jsonl --output out.jsonl
package main

import (
	"os"

	"convrep/cmd/internal/embedcmd"
)

func main() { os.Exit(embedcmd.Main(os.Args[1:])) }
