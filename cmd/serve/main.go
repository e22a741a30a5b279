// Command serve puts a convrep or HuggingFace model behind the embedding APIs clients speak: OpenAI's
// /v1/embeddings, TEI's /embed and Ollama's /api/embed (convrep serve does the same; see cmd/internal/servecmd
// and docs/serving.md):
//
//	go run ./cmd/serve --model DIR_OR_NAME [--addr 127.0.0.1:8080] [--api-key KEY]
package main

import (
	"os"

	"convrep/cmd/internal/servecmd"
)

func main() { os.Exit(servecmd.Main(os.Args[1:])) }
