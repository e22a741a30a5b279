package serve

import (
	"encoding/json"
	"net/http"
	"time"
)

// openAIRequest is the body of OpenAI's POST /v1/embeddings. Truncate is convrep's own (as TEI's): true,
// the default, cuts a long input; false refuses it.
type openAIRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           json.RawMessage `json:"user"` // accepted and ignored
	Truncate       *bool           `json:"truncate"`
}

type openAIEmbedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string
}

type openAIUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type openAIResponse struct {
	Object string            `json:"object"`
	Data   []openAIEmbedding `json:"data"`
	Model  string            `json:"model"`
	Usage  openAIUsage       `json:"usage"`
}

// inputsField: OpenAI's input, strings or token ids.
func (r *openAIRequest) inputsField() (json.RawMessage, string, bool) { return r.Input, "input", true }

// openAIEmbeddings answers POST /v1/embeddings (and /embeddings) as OpenAI does: the vectors as convrep
// embed writes them (unit length when the model normalises), cut to dimensions and normalised again when
// the model normalises, as floats or base64 little-endian float32s.
func (s *Server) openAIEmbeddings(w http.ResponseWriter, r *http.Request) *apiError {
	start := time.Now()
	req, in, aerr := readRequest[openAIRequest](s, w, r)
	if aerr != nil {
		return aerr
	}
	if aerr := s.checkModel(req.Model, "the model %q is not served here; this server serves %q"); aerr != nil {
		return aerr
	}
	base64 := false
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		base64 = true
	default:
		return fail(http.StatusBadRequest, KindValidation, "invalid_encoding_format", "encoding_format",
			"encoding_format %q: want float or base64", req.EncodingFormat)
	}
	dims, aerr := s.dimensions(req.Dimensions)
	if aerr != nil {
		return aerr
	}
	res, aerr := s.embed(r.Context(), in, "input", req.Truncate == nil || *req.Truncate)
	if aerr != nil {
		return aerr
	}
	out := openAIResponse{Object: "list", Data: make([]openAIEmbedding, len(res.vecs)), Model: s.cfg.ModelName,
		Usage: openAIUsage{PromptTokens: res.tokens, TotalTokens: res.tokens}}
	for i, v := range res.vecs {
		v = finish(v, dims, s.cfg.Normalize)
		var e any = v
		if base64 {
			e = base64Floats(v)
		}
		out.Data[i] = openAIEmbedding{Object: "embedding", Index: i, Embedding: e}
	}
	setTimes(w, res, start)
	writeJSON(w, http.StatusOK, out)
	return nil
}
