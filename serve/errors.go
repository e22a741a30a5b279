package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Kind is what went wrong with a request: the failure metric's label, and TEI's error_type.
type Kind string

const (
	KindEmpty       Kind = "empty"           // no input, or an empty text
	KindValidation  Kind = "validation"      // a request that parses but is not valid
	KindTooLarge    Kind = "too_large"       // a body over Config.PayloadLimit, or more inputs than Config.MaxClientBatchSize
	KindOverloaded  Kind = "overloaded"      // more inputs in flight than Config.MaxConcurrentInputs
	KindAuth        Kind = "unauthorized"    // a missing or wrong API key
	KindModel       Kind = "model_not_found" // a model name this server does not serve
	KindNotFound    Kind = "not_found"       // no such route, or the wrong method
	KindUnavailable Kind = "unavailable"     // warming up or draining
	KindInternal    Kind = "internal"        // a failed forward pass, or a panic
	KindGone        Kind = "client_gone"     // the client left before its answer (counted, not answered)
)

// apiError is a failed request: its HTTP status, kind, message, and for OpenAI's shape a machine-readable
// code and the request field at fault.
type apiError struct {
	status int
	kind   Kind
	code   string
	param  string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// fail makes an apiError; code defaults to the kind.
func fail(status int, kind Kind, code, param, format string, a ...any) *apiError {
	if code == "" {
		code = string(kind)
	}
	return &apiError{status: status, kind: kind, code: code, param: param, msg: fmt.Sprintf(format, a...)}
}

// shape is the API family a route belongs to, which decides how its errors read.
type shape int

const (
	teiShape    shape = iota // {"error": "...", "error_type": "..."}
	openAIShape              // {"error": {"message", "type", "param", "code"}}
	ollamaShape              // {"error": "..."}
)

// shapeOf is the error shape of a path, for routes that do not exist too.
func shapeOf(path string) shape {
	switch {
	case path == "/embeddings" || len(path) >= 4 && path[:4] == "/v1/":
		return openAIShape
	case len(path) >= 5 && path[:5] == "/api/":
		return ollamaShape
	}
	return teiShape
}

// openAIError is the body OpenAI's SDKs read an error from (they look under "error").
type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// teiErrorTypes are TEI's error_type names where TEI has one for the kind.
var teiErrorTypes = map[Kind]string{
	KindTooLarge: "validation", KindModel: "validation", KindUnavailable: "unhealthy", KindInternal: "backend",
}

// body is e as the shape writes it.
func (sh shape) body(e *apiError) any {
	switch sh {
	case openAIShape:
		typ := "invalid_request_error"
		switch {
		case e.status == http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case e.status >= 500:
			typ = "server_error"
		}
		var param *string
		if e.param != "" {
			param = &e.param
		}
		return map[string]openAIError{"error": {Message: e.msg, Type: typ, Param: param, Code: e.code}}
	case ollamaShape:
		return map[string]string{"error": e.msg}
	}
	typ, ok := teiErrorTypes[e.kind]
	if !ok {
		typ = string(e.kind)
	}
	return map[string]string{"error": e.msg, "error_type": typ}
}

// writeError answers e in the shape; 429 and 503 say when to retry.
func writeError(w http.ResponseWriter, sh shape, e *apiError) {
	if e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(1))
	}
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="convrep"`)
	}
	writeJSON(w, e.status, sh.body(e))
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only values of this package are written; none fails to marshal
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode the response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
