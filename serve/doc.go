// Package serve puts a models.Embedder behind the HTTP APIs embedding clients speak: OpenAI's
// /v1/embeddings, HuggingFace text-embeddings-inference's /embed, /tokenize, /info and /health, Ollama's
// /api/embed, and Prometheus metrics on /metrics.
//
// Every request's inputs go, tokenised off the model's thread, into one queue. One inference goroutine,
// locked to its OS thread (libtorch's grad mode and autocast are per thread), runs the batches: each holds the
// oldest queued input and the inputs of a window of the queue closest to it in length, bounded by a token
// budget (rows × longest row) and a row count; the next batch is chosen while one runs. A text's vector does
// not depend on what shares its batch.
//
// Limits bound every request: body bytes, inputs per request, inputs in flight (429 at once beyond them,
// nothing waits in an unbounded queue), input length, and the HTTP server's timeouts. Errors are JSON in
// each API's own shape (errors.go).
//
//	s, err := serve.New(serve.DefaultConfig(), embedder, log)
//	ln, err := net.Listen("tcp", "127.0.0.1:8080")
//	err = s.Serve(ctx, ln) // until ctx ends; then drains within Config.DrainTimeout
package serve
