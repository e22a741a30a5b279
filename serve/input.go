package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// inputs is a request's input field: texts, or rows of token ids (the tokens as given).
type inputs struct {
	texts []string
	ids   [][]int64
	// single: the field was one string or one list of ids, not a list of them (it names its index as such).
	single bool
}

func (in inputs) len() int { return len(in.texts) + len(in.ids) }

// decodeBody unmarshals a JSON body into v: malformed JSON is 400 with the byte offset, a field of the
// wrong JSON type 400 naming the field.
func decodeBody(body []byte, v any) *apiError {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fail(http.StatusBadRequest, KindValidation, "invalid_json", "", "malformed JSON at byte %d of the body: %v", syntax.Offset, err)
	case errors.As(err, &typ) && typ.Field == "":
		return fail(http.StatusBadRequest, KindValidation, "invalid_json", "", "the body must be a JSON object, not a JSON %s", typ.Value)
	case errors.As(err, &typ):
		return fail(http.StatusBadRequest, KindValidation, "invalid_type", typ.Field, "field %q at byte %d: want a JSON %s, not a JSON %s", typ.Field, typ.Offset, typ.Type, typ.Value)
	}
	return fail(http.StatusBadRequest, KindValidation, "invalid_json", "", "the body: %v", err)
}

// parseInputs reads raw, the JSON of the field named field: a string, a list of strings, or when ids is
// true a list of token ids or a list of such lists. A missing field or an empty list is 400; a list of
// mixed kinds or an id that is not a whole number ≥ 0 is 422.
// checkModel refuses a request that names a model this server does not serve ("" names none), in the words of
// the route's API (format takes the name asked for and the name served).
func (s *Server) checkModel(name, format string) *apiError {
	if name == "" || s.names[name] {
		return nil
	}
	return fail(http.StatusNotFound, KindModel, "model_not_found", "model", format, name, s.cfg.ModelName)
}

// request is a route's request body, pointed to: it says which of its fields holds the inputs, how the route
// names it, and whether token ids are taken there.
type request[R any] interface {
	*R
	inputsField() (raw json.RawMessage, field string, ids bool)
}

// decodeRequest reads body as a request of type R and parses its inputs.
func decodeRequest[R any, P request[R]](body []byte) (R, inputs, *apiError) {
	var req R
	if aerr := decodeBody(body, &req); aerr != nil {
		return req, inputs{}, aerr
	}
	raw, field, ids := P(&req).inputsField()
	in, aerr := parseInputs(raw, field, ids)
	return req, in, aerr
}

// readRequest reads r's body (bounded by the payload limit) as a request of type R and parses its inputs.
func readRequest[R any, P request[R]](s *Server, w http.ResponseWriter, r *http.Request) (R, inputs, *apiError) {
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		var zero R
		return zero, inputs{}, aerr
	}
	return decodeRequest[R, P](body)
}

func parseInputs(raw json.RawMessage, field string, ids bool) (inputs, *apiError) {
	raw = bytes.TrimSpace(raw)
	want := "a string or a list of strings"
	if ids {
		want = "a string, a list of strings, a list of token ids, or a list of lists of token ids"
	}
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return inputs{}, fail(http.StatusBadRequest, KindEmpty, "missing_input", field, "%s is required: %s", field, want)
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return inputs{}, fail(http.StatusBadRequest, KindValidation, "invalid_json", field, "%s: %v", field, err)
		}
		return inputs{texts: []string{s}, single: true}, nil
	case raw[0] != '[':
		return inputs{}, fail(http.StatusUnprocessableEntity, KindValidation, "invalid_input", field, "%s: want %s", field, want)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return inputs{}, fail(http.StatusBadRequest, KindValidation, "invalid_json", field, "%s: %v", field, err)
	}
	if len(elems) == 0 {
		return inputs{}, fail(http.StatusBadRequest, KindEmpty, "empty_input", field, "%s is an empty list: give at least one input", field)
	}
	var in inputs
	first := elems[0][0]
	switch {
	case first == '"':
		for i, e := range elems {
			var s string
			if len(e) == 0 || e[0] != '"' || json.Unmarshal(e, &s) != nil {
				return inputs{}, fail(http.StatusUnprocessableEntity, KindValidation, "invalid_input", field, "%s[%d]: want a string like %s[0], got %.40s", field, i, field, e)
			}
			in.texts = append(in.texts, s)
		}
	case ids && first == '[':
		for i, e := range elems {
			row, err := tokenIDs(e, fmt.Sprintf("%s[%d]", field, i))
			if err != nil {
				return inputs{}, err
			}
			in.ids = append(in.ids, row)
		}
	case ids:
		row, err := tokenIDs(raw, field)
		if err != nil {
			return inputs{}, err
		}
		in.ids, in.single = [][]int64{row}, true
	default:
		return inputs{}, fail(http.StatusUnprocessableEntity, KindValidation, "invalid_input", field, "%s: want %s", field, want)
	}
	return in, nil
}

// tokenIDs reads one JSON list of token ids; where names it in errors. An empty list is 422.
func tokenIDs(raw json.RawMessage, where string) ([]int64, *apiError) {
	var elems []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		return nil, fail(http.StatusUnprocessableEntity, KindValidation, "invalid_input", "input", "%s: want a list of token ids, got %.40s", where, raw)
	}
	if len(elems) == 0 {
		return nil, fail(http.StatusUnprocessableEntity, KindEmpty, "empty_input", "input", "%s is an empty list of token ids", where)
	}
	row := make([]int64, len(elems))
	for i, e := range elems {
		id, err := strconv.ParseInt(string(e), 10, 64)
		if err != nil || id < 0 {
			return nil, fail(http.StatusUnprocessableEntity, KindValidation, "invalid_token_id", "input", "%s[%d]: token id %.40s is not a whole number ≥ 0", where, i, e)
		}
		row[i] = id
	}
	return row, nil
}

// name is how an error names input i: "input" for a single input, else "input[i]".
func (in inputs) name(field string, i int) string {
	if in.single {
		return field
	}
	return fmt.Sprintf("%s[%d]", field, i)
}
