package serve

import (
	"encoding/json"
	"net/http"
	"time"

	"convrep/models"
	"convrep/tokenizers"
)

// Version is what /info reports as the server's version.
var Version = "convrep-serve/1"

// teiEmbedRequest is the body of TEI's POST /embed. Truncate defaults to true (TEI's to false), as every
// route of this server; Normalize to true, as TEI's.
type teiEmbedRequest struct {
	Inputs     json.RawMessage `json:"inputs"`
	Truncate   *bool           `json:"truncate"`
	Normalize  *bool           `json:"normalize"`
	Dimensions *int            `json:"dimensions"`
}

// teiTokenizeRequest is the body of TEI's POST /tokenize.
type teiTokenizeRequest struct {
	Inputs           json.RawMessage `json:"inputs"`
	AddSpecialTokens *bool           `json:"add_special_tokens"`
}

// teiToken is one token as TEI's /tokenize lists it. convrep's tokenizer keeps no character offsets, so
// start and stop are null.
type teiToken struct {
	ID      int64  `json:"id"`
	Text    string `json:"text"`
	Special bool   `json:"special"`
	Start   *int   `json:"start"`
	Stop    *int   `json:"stop"`
}

// inputsField: TEI's inputs, strings or token ids.
func (r *teiEmbedRequest) inputsField() (json.RawMessage, string, bool) {
	return r.Inputs, "inputs", true
}

// teiEmbed answers POST /embed: [[float]], unit length unless normalize is false, cut to dimensions first.
func (s *Server) teiEmbed(w http.ResponseWriter, r *http.Request) *apiError {
	start := time.Now()
	req, in, aerr := readRequest[teiEmbedRequest](s, w, r)
	if aerr != nil {
		return aerr
	}
	dims, aerr := s.dimensions(req.Dimensions)
	if aerr != nil {
		return aerr
	}
	res, aerr := s.embed(r.Context(), in, "inputs", req.Truncate == nil || *req.Truncate)
	if aerr != nil {
		return aerr
	}
	unit := req.Normalize == nil || *req.Normalize
	for i, v := range res.vecs {
		res.vecs[i] = finish(v, dims, unit)
	}
	setTimes(w, res, start)
	writeJSON(w, http.StatusOK, res.vecs)
	return nil
}

// teiTokenize answers POST /tokenize: each input's tokens, uncut, with the special tokens unless
// add_special_tokens is false.
func (s *Server) teiTokenize(w http.ResponseWriter, r *http.Request) *apiError {
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		return aerr
	}
	var req teiTokenizeRequest
	if aerr := decodeBody(body, &req); aerr != nil {
		return aerr
	}
	in, aerr := parseInputs(req.Inputs, "inputs", false)
	if aerr != nil {
		return aerr
	}
	if n := in.len(); n > s.cfg.MaxClientBatchSize {
		return fail(http.StatusRequestEntityTooLarge, KindTooLarge, "too_many_inputs", "inputs",
			"inputs holds %d inputs; the limit is %d per request (--max-client-batch-size)", n, s.cfg.MaxClientBatchSize)
	}
	select {
	case s.tokenizers <- struct{}{}:
		defer func() { <-s.tokenizers }()
	case <-r.Context().Done():
		return fail(499, KindGone, "", "", "the client went away")
	}
	specials := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	out := make([][]teiToken, len(in.texts))
	for i, t := range in.texts {
		ids, _, _, err := s.e.Tokenizer.EncodeOne(t, tokenizers.BatchOptions{})
		if err != nil {
			return fail(http.StatusUnprocessableEntity, KindValidation, "invalid_input", "inputs", "%s: %v", in.name("inputs", i), err)
		}
		if !specials { // EncodeOne wraps a single text in exactly one special token on each side
			ids = ids[1 : len(ids)-1]
		}
		out[i] = make([]teiToken, len(ids))
		for k, id := range ids {
			text, _ := s.e.Tokenizer.IDToken(id)
			out[i][k] = teiToken{ID: id, Text: text, Special: s.e.Tokenizer.IsSpecial(id)}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// teiInfo answers GET /info: the model, its vectors and every limit.
func (s *Server) teiInfo(w http.ResponseWriter, _ *http.Request) *apiError {
	writeJSON(w, http.StatusOK, map[string]any{
		"model_id":                s.cfg.ModelName,
		"model_dtype":             precisionName(s.e),
		"model_type":              map[string]any{"embedding": map[string]string{"pooling": string(s.e.Pooling)}},
		"dimensions":              s.dims,
		"normalize":               s.cfg.Normalize,
		"max_input_length":        s.maxLength,
		"max_batch_tokens":        s.cfg.MaxBatchTokens,
		"max_batch_requests":      s.cfg.MaxBatchSize,
		"max_client_batch_size":   s.cfg.MaxClientBatchSize,
		"max_concurrent_requests": s.cfg.MaxConcurrentInputs,
		"max_concurrent_inputs":   s.cfg.MaxConcurrentInputs,
		"payload_limit":           s.cfg.PayloadLimit,
		"tokenization_workers":    s.cfg.TokenizeWorkers,
		"version":                 Version,
	})
	return nil
}

// precisionName is the arithmetic e runs in, as /info reports it.
func precisionName(e *models.Embedder) string {
	if e.Precision == "" {
		return string(models.FP32)
	}
	return string(e.Precision)
}
