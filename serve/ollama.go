package serve

import (
	"encoding/json"
	"net/http"
	"time"
)

// ollamaRequest is the body of Ollama's POST /api/embed. keep_alive and options are accepted and ignored.
type ollamaRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Truncate   *bool           `json:"truncate"`
	Dimensions *int            `json:"dimensions"`
	KeepAlive  json.RawMessage `json:"keep_alive"`
	Options    json.RawMessage `json:"options"`
}

type ollamaResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	TotalDuration   int64       `json:"total_duration"` // nanoseconds
	LoadDuration    int64       `json:"load_duration"`  // nanoseconds: 0, the model is loaded at start
	PromptEvalCount int         `json:"prompt_eval_count"`
}

// inputsField: Ollama's input, strings only.
func (r *ollamaRequest) inputsField() (json.RawMessage, string, bool) { return r.Input, "input", false }

// ollamaEmbed answers POST /api/embed as Ollama does: unit vectors, cut to dimensions first.
func (s *Server) ollamaEmbed(w http.ResponseWriter, r *http.Request) *apiError {
	start := time.Now()
	req, in, aerr := readRequest[ollamaRequest](s, w, r)
	if aerr != nil {
		return aerr
	}
	if aerr := s.checkModel(req.Model, "model %q not found; this server serves %q"); aerr != nil {
		return aerr
	}
	dims, aerr := s.dimensions(req.Dimensions)
	if aerr != nil {
		return aerr
	}
	res, aerr := s.embed(r.Context(), in, "input", req.Truncate == nil || *req.Truncate)
	if aerr != nil {
		return aerr
	}
	for i, v := range res.vecs {
		res.vecs[i] = finish(v, dims, true)
	}
	setTimes(w, res, start)
	writeJSON(w, http.StatusOK, ollamaResponse{Model: s.cfg.ModelName, Embeddings: res.vecs,
		TotalDuration: time.Since(start).Nanoseconds(), PromptEvalCount: res.tokens})
	return nil
}
