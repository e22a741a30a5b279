package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestParseInputs(t *testing.T) {
	for _, tc := range []struct {
		raw    string
		ids    bool
		texts  []string
		rows   [][]int64
		status int
		msg    string
	}{
		{raw: `"hi"`, texts: []string{"hi"}},
		{raw: ` ["a", "b c"] `, texts: []string{"a", "b c"}},
		{raw: `[1, 2, 3]`, ids: true, rows: [][]int64{{1, 2, 3}}},
		{raw: `[[1], [4, 5]]`, ids: true, rows: [][]int64{{1}, {4, 5}}},
		{raw: ``, status: 400, msg: "input is required"},
		{raw: `null`, status: 400, msg: "input is required"},
		{raw: `[]`, status: 400, msg: "empty list"},
		{raw: `["a", 3]`, status: 422, msg: "input[1]: want a string"},
		{raw: `[1, 2]`, status: 422, msg: "want a string or a list of strings"},
		{raw: `[[1], []]`, ids: true, status: 422, msg: "input[1] is an empty list"},
		{raw: `[1, -2]`, ids: true, status: 422, msg: "input[1]: token id -2"},
		{raw: `[1, 2.5]`, ids: true, status: 422, msg: "input[1]: token id 2.5"},
		{raw: `[[1], "a"]`, ids: true, status: 422, msg: "input[1]: want a list of token ids"},
		{raw: `{"a": 1}`, status: 422, msg: "input: want"},
		{raw: `7`, ids: true, status: 422, msg: "input: want"},
	} {
		in, aerr := parseInputs(json.RawMessage(tc.raw), "input", tc.ids)
		if tc.status != 0 {
			if aerr == nil || aerr.status != tc.status || !strings.Contains(aerr.msg, tc.msg) {
				t.Errorf("%s: %v, want %d %q", tc.raw, aerr, tc.status, tc.msg)
			}
			continue
		}
		if aerr != nil || fmt.Sprint(in.texts) != fmt.Sprint(tc.texts) || fmt.Sprint(in.ids) != fmt.Sprint(tc.rows) {
			t.Errorf("%s: %q %v (%v), want %q %v", tc.raw, in.texts, in.ids, aerr, tc.texts, tc.rows)
		}
	}
}

// Malformed JSON is 400 with the byte offset; a field of the wrong type names it.
func TestDecodeBody(t *testing.T) {
	for _, tc := range []struct{ body, msg string }{
		{`{"input": "a",}`, "malformed JSON at byte 15"},
		{``, "malformed JSON at byte 0"},
		{`{"input": "a"} x`, "malformed JSON at byte 16"},
		{`[1]`, "must be a JSON object, not a JSON array"},
		{`{"model": 5}`, `field "model" at byte 11: want a JSON string, not a JSON number`},
		{`{"dimensions": "8"}`, `field "dimensions"`},
	} {
		var req openAIRequest
		aerr := decodeBody([]byte(tc.body), &req)
		if aerr == nil || aerr.status != http.StatusBadRequest || !strings.Contains(aerr.msg, tc.msg) {
			t.Errorf("%q: %v, want 400 %q", tc.body, aerr, tc.msg)
		}
	}
}

// The request decoders of the three APIs take any body without a panic: they return inputs, or an error
// of the 4xx kind whose message is not empty.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"input": "hello", "model": "tiny"}`, `{"input": ["a", "b"], "encoding_format": "base64", "dimensions": 8}`,
		`{"input": [[101, 2023, 102]]}`, `{"input": [101, 102]}`, `{"inputs": "x", "truncate": false, "normalize": false}`,
		`{"model": "m", "input": ["x"], "keep_alive": "5m", "options": {}}`, `{"input": [[]]}`, `{"input": [1e3]}`,
		`{"input": [-1]}`, `{"input": [[1], "a"]}`, `{"input": null}`, `[]`, `{`, ``, `{"input": "\ud800"}`,
		`{"input": [99999999999999999999]}`, `{"dimensions": -1, "input": "a"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(api string, in inputs, aerr *apiError) {
			if aerr != nil {
				if aerr.status < 400 || aerr.status > 499 || aerr.msg == "" || aerr.kind == "" {
					t.Errorf("%s %q: error %d %q %q", api, body, aerr.status, aerr.kind, aerr.msg)
				}
				return
			}
			if in.len() == 0 {
				t.Errorf("%s %q: no inputs and no error", api, body)
			}
			for _, row := range in.ids {
				if len(row) == 0 {
					t.Errorf("%s %q: an empty row of ids", api, body)
				}
				for _, id := range row {
					if id < 0 {
						t.Errorf("%s %q: negative id %d", api, body, id)
					}
				}
			}
		}
		_, in, aerr := decodeRequest[openAIRequest](body)
		check("openai", in, aerr)
		_, in, aerr = decodeRequest[teiEmbedRequest](body)
		check("tei", in, aerr)
		_, in, aerr = decodeRequest[ollamaRequest](body)
		check("ollama", in, aerr)
	})
}
