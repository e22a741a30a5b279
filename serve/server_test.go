package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"go.uber.org/zap"

	"convrep/models"
)

// texts of very different lengths; the last is over the tiny model's 64 positions and is cut.
var texts = []string{
	"hi",
	"i would like to book a table for two at an italian restaurant in the centre of town tonight please",
	"ok",
	"the train leaves cambridge at nine and arrives in london at ten",
	strings.Repeat("where is the hotel and how much does a room cost ", 12),
	"yes",
}

// What comes out does not depend on the batch: texts of very different lengths, padded to the longest in
// one forward pass, each give the vector convrep embed writes for the text alone (Embedder.Embed), within
// 1e-5 in fp32.
func TestBatchIndependence(t *testing.T) {
	e := tinyEmbedder(t)
	passes := 0
	b := newBatcher(func(rows []models.Encoded) ([][]float32, error) {
		passes++
		return e.EmbedEncoded(rows)
	}, 100000, 64, 1000, newMetrics())
	b.start()
	defer b.close()
	rows := make([]models.Encoded, len(texts))
	for i, s := range texts {
		r, err := e.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		rows[i] = r
	}
	if len(rows[4].IDs) != 64 || len(rows[0].IDs) != 3 {
		t.Fatalf("lengths %d and %d, want 64 (cut) and 3", len(rows[4].IDs), len(rows[0].IDs))
	}
	b.admit(len(rows))
	vecs, err := b.submit(context.Background(), rows).wait()
	if err != nil {
		t.Fatal(err)
	}
	if passes != 1 {
		t.Fatalf("%d forward passes, want the texts in one batch", passes)
	}
	for i, s := range texts {
		if err := near(vecs[i], reference(t, e, s), 1e-5); err != nil {
			t.Errorf("text %d (%d tokens) in a batch padded to 64: %v", i, len(rows[i].IDs), err)
		}
	}
}

// The official Go client, with floats and with base64, gets the vectors convrep embed writes, in order,
// with the tokens counted.
func TestOpenAIGoClient(t *testing.T) {
	e := tinyEmbedder(t)
	cfg := testConfig()
	cfg.APIKey = "secret"
	r := start(t, cfg, e, nil)
	client := openai.NewClient(option.WithBaseURL(r.url+"/v1/"), option.WithAPIKey("secret"), option.WithMaxRetries(0))
	ctx := context.Background()
	want := make([][]float32, len(texts))
	tokens := 0
	for i, s := range texts {
		want[i] = reference(t, e, s)
		row, _ := e.Encode(s)
		tokens += len(row.IDs)
	}

	resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}, Model: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != len(texts) || resp.Model != "tiny" || resp.Usage.PromptTokens != int64(tokens) || resp.Usage.TotalTokens != int64(tokens) {
		t.Fatalf("%d vectors, model %q, usage %+v; want %d, tiny, %d tokens", len(resp.Data), resp.Model, resp.Usage, len(texts), tokens)
	}
	for i, d := range resp.Data {
		got := make([]float32, len(d.Embedding))
		for k, x := range d.Embedding {
			got[k] = float32(x)
		}
		if err := near(got, want[i], 1e-5); err != nil || d.Index != int64(i) {
			t.Errorf("float, text %d (index %d): %v", i, d.Index, err)
		}
	}

	resp, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}, Model: "tiny-bert",
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range resp.Data {
		var s string
		if err := json.Unmarshal([]byte(d.JSON.Embedding.Raw()), &s); err != nil {
			t.Fatalf("base64, text %d: %v", i, err)
		}
		if err := near(fromBase64(t, s), want[i], 1e-5); err != nil {
			t.Errorf("base64, text %d: %v", i, err)
		}
	}

	// The errors the SDK reads from under "error".
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}, Model: "gpt-4"})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" || apiErr.Param != "model" || !strings.Contains(apiErr.Message, `"gpt-4"`) {
		t.Errorf("unknown model: %v, want 404 model_not_found", err)
	}
	bad := openai.NewClient(option.WithBaseURL(r.url+"/v1/"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	_, err = bad.Embeddings.New(ctx, openai.EmbeddingNewParams{Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}, Model: "tiny"})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" {
		t.Errorf("wrong key: %v, want 401 invalid_api_key", err)
	}

	// Token ids are embedded as given: the ids of a text, specials included, give that text's vector.
	row, _ := e.Encode(texts[3])
	resp, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{row.IDs}}, Model: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if err := near(f32(resp.Data[0].Embedding), want[3], 1e-5); err != nil || resp.Usage.PromptTokens != int64(len(row.IDs)) {
		t.Errorf("token ids: %v, %d tokens", err, resp.Usage.PromptTokens)
	}
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func fromBase64(t *testing.T, s string) []float32 {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		t.Fatalf("base64 %q: %v", s, err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// post sends body to path and returns the status, the headers and the decoded JSON answer.
func post(t *testing.T, url, path, body string, header ...string) (int, http.Header, any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, http.Header, any) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var v any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &v); err != nil && !strings.HasPrefix(req.URL.Path, "/metrics") {
			t.Fatalf("%s %s: the answer is not JSON: %q", req.Method, req.URL.Path, b)
		}
		if v == nil {
			v = string(b)
		}
	}
	return res.StatusCode, res.Header, v
}

// vectorsOf reads a JSON [[float]].
func vectorsOf(t *testing.T, v any) [][]float32 {
	t.Helper()
	b, _ := json.Marshal(v)
	var out [][]float32
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out
}

// TEI's /embed (unit vectors unless normalize is false, dimensions cut first), /tokenize, /info and
// /health; Ollama's /api/embed; OpenAI's dimensions on a model that normalises.
func TestTEIAndOllamaShapes(t *testing.T) {
	e := tinyEmbedder(t)
	cfg := testConfig()
	cfg.Normalize = true
	r := start(t, cfg, e, nil)
	want0, want1 := reference(t, e, texts[0]), reference(t, e, texts[1])

	status, h, v := post(t, r.url, "/embed", `{"inputs": ["hi", "`+texts[1]+`"]}`)
	got := vectorsOf(t, v)
	if status != 200 || len(got) != 2 || near(got[0], unit(want0), 1e-5) != nil || near(got[1], unit(want1), 1e-5) != nil {
		t.Errorf("/embed: %d %v", status, v)
	}
	for _, k := range []string{"x-compute-tokens", "x-total-time", "x-tokenization-time", "x-queue-time", "x-inference-time"} {
		if h.Get(k) == "" {
			t.Errorf("/embed: no %s header", k)
		}
	}
	_, _, v = post(t, r.url, "/", `{"inputs": "hi"}`) // TEI's root route, where huggingface_hub's client posts
	if got := vectorsOf(t, v); len(got) != 1 || near(got[0], unit(want0), 1e-5) != nil {
		t.Errorf("POST /: %v", v)
	}
	_, _, v = post(t, r.url, "/embed", `{"inputs": "hi", "normalize": false, "dimensions": 8}`)
	if got := vectorsOf(t, v); len(got) != 1 || near(got[0], want0[:8], 1e-5) != nil {
		t.Errorf("/embed normalize false, dimensions 8: %v", v)
	}
	_, _, v = post(t, r.url, "/v1/embeddings", `{"input": "hi", "model": "tiny", "dimensions": 8}`)
	data := v.(map[string]any)["data"].([]any)[0].(map[string]any)["embedding"]
	if got := vectorsOf(t, []any{data}); near(got[0], unit(want0[:8]), 1e-5) != nil {
		t.Errorf("OpenAI dimensions 8 on a normalising model: %v, want the first 8 values normalised again", data)
	}

	status, _, v = post(t, r.url, "/api/embed", `{"model": "tiny", "input": ["hi", "`+texts[1]+`"]}`)
	m, _ := v.(map[string]any)
	if got := vectorsOf(t, m["embeddings"]); status != 200 || m["model"] != "tiny" || len(got) != 2 || near(got[1], unit(want1), 1e-5) != nil {
		t.Errorf("/api/embed: %d %v", status, v)
	}
	row, _ := e.Encode("hi")
	n := len(row.IDs)
	row, _ = e.Encode(texts[1])
	if m["prompt_eval_count"] != float64(n+len(row.IDs)) || m["total_duration"].(float64) <= 0 {
		t.Errorf("/api/embed counts: %v", m)
	}

	for _, tc := range []struct{ body, want string }{
		{`{"inputs": "hi there"}`, "[[[CLS]* hi there [SEP]*]]"},
		{`{"inputs": ["hi there", "ok"], "add_special_tokens": false}`, "[[hi there] [ok]]"},
	} {
		status, _, v = post(t, r.url, "/tokenize", tc.body)
		b, _ := json.Marshal(v)
		var toks [][]teiToken
		json.Unmarshal(b, &toks)
		var got [][]string
		for _, row := range toks {
			var words []string
			for _, tok := range row {
				if tok.Special {
					tok.Text += "*"
				}
				words = append(words, tok.Text)
			}
			got = append(got, words)
		}
		if status != 200 || fmt.Sprint(got) != tc.want {
			t.Errorf("/tokenize %s: %d %s, want %s", tc.body, status, b, tc.want)
		}
	}

	req, _ := http.NewRequest(http.MethodGet, r.url+"/info", nil)
	status, _, v = do(t, req)
	info, _ := v.(map[string]any)
	if status != 200 || info["model_id"] != "tiny" || info["dimensions"] != float64(32) || info["max_input_length"] != float64(64) || info["max_client_batch_size"] != float64(cfg.MaxClientBatchSize) {
		t.Errorf("/info: %d %v", status, v)
	}
	req, _ = http.NewRequest(http.MethodGet, r.url+"/health", nil)
	if status, _, _ = do(t, req); status != 200 {
		t.Errorf("/health: %d", status)
	}
}

// Every refusal: its status, its message, and its route's shape.
func TestErrors(t *testing.T) {
	e := tinyEmbedder(t)
	cfg := testConfig()
	cfg.PayloadLimit = 2000
	cfg.MaxClientBatchSize = 3
	cfg.APIKey = "k"
	r := start(t, cfg, e, nil)
	long := strings.Repeat("word ", 80)
	auth := []string{"Authorization", "Bearer k"}
	for _, tc := range []struct {
		method, path, body string
		header             []string
		status             int
		code, msg          string // code: OpenAI's code, or TEI's error_type; "" for Ollama
	}{
		{"POST", "/v1/embeddings", `{"input": "hi"}`, nil, 401, "invalid_api_key", "API key"},
		{"POST", "/v1/embeddings", `{"input": "hi"}`, []string{"Authorization", "Bearer nope"}, 401, "invalid_api_key", "API key"},
		{"POST", "/embed", `{"inputs": "hi"}`, nil, 401, "unauthorized", "API key"},
		{"POST", "/api/embed", `{"input": "hi"}`, nil, 401, "", "API key"},
		{"POST", "/v1/embeddings", `{"input": "hi", "model": "other"}`, auth, 404, "model_not_found", `"other" is not served here`},
		{"POST", "/api/embed", `{"input": "hi", "model": "other"}`, auth, 404, "", `model "other" not found`},
		{"POST", "/v1/embeddings", `{"input": "` + strings.Repeat("a", 3000) + `"}`, auth, 413, "payload_too_large", "limit of 2000 bytes"},
		{"POST", "/embed", `{"inputs": "` + strings.Repeat("a", 3000) + `"}`, auth, 413, "validation", "--payload-limit"},
		{"POST", "/v1/embeddings", `{"input": ["a", "b", "c", "d"]}`, auth, 413, "too_many_inputs", "the limit is 3 per request"},
		{"POST", "/embed", `{"inputs": ["a", "b", "c", "d"]}`, auth, 413, "validation", "the limit is 3"},
		{"POST", "/api/embed", `{"input": ["a", "b", "c", "d"]}`, auth, 413, "", "--max-client-batch-size"},
		{"POST", "/v1/embeddings", `{"input": ["a", "` + long + `"], "truncate": false}`, auth, 422, "input_too_long", "input[1] has 82 tokens; the model takes at most 64"},
		{"POST", "/embed", `{"inputs": "` + long + `", "truncate": false}`, auth, 422, "validation", "inputs has 82 tokens"},
		{"POST", "/api/embed", `{"input": ["` + long + `"], "truncate": false}`, auth, 422, "", "input[0] has 82 tokens"},
		{"POST", "/v1/embeddings", `{"input": [[101, 99999]]}`, auth, 422, "invalid_token_id", "input[0][1]: token id 99999 is outside the model's vocabulary (ids 0 to 30521)"},
		{"POST", "/v1/embeddings", `{"input": [` + strings.Repeat("1,", 70) + `1], "truncate": false}`, auth, 422, "input_too_long", "input has 71 tokens"},
		{"POST", "/v1/embeddings", `{"input": []}`, auth, 400, "empty_input", "empty list"},
		{"POST", "/v1/embeddings", `{"input": ["a", ""]}`, auth, 422, "empty_input", "input[1] is an empty string"},
		{"POST", "/embed", `{"inputs": ""}`, auth, 422, "empty", "inputs is an empty string"},
		{"POST", "/v1/embeddings", `{"model": "tiny"}`, auth, 400, "missing_input", "input is required"},
		{"POST", "/v1/embeddings", `{"input": "a",}`, auth, 400, "invalid_json", "malformed JSON at byte 15"},
		{"POST", "/embed", `{"inputs": `, auth, 400, "validation", "malformed JSON at byte 11"},
		{"POST", "/api/embed", `nope`, auth, 400, "", "malformed JSON at byte 2"},
		{"POST", "/v1/embeddings", `{"input": "a", "encoding_format": "int8"}`, auth, 400, "invalid_encoding_format", "want float or base64"},
		{"POST", "/v1/embeddings", `{"input": "a", "dimensions": 33}`, auth, 400, "invalid_dimensions", "ask for 1 to 32"},
		{"POST", "/embed", `{"inputs": "a", "dimensions": 0}`, auth, 400, "validation", "ask for 1 to 32"},
		{"GET", "/v1/embeddings", ``, auth, 405, "method_not_allowed", "takes POST, not GET"},
		{"POST", "/info", ``, auth, 405, "not_found", "takes GET"},
		{"GET", "/v1/models/x", ``, auth, 404, "not_found", "no route GET /v1/models/x"},
		{"GET", "/nowhere", ``, nil, 404, "not_found", "no route"},
		{"GET", "/", ``, nil, 405, "not_found", "/ takes POST, not GET"},
	} {
		req, _ := http.NewRequest(tc.method, r.url+tc.path, strings.NewReader(tc.body))
		for i := 0; i+1 < len(tc.header); i += 2 {
			req.Header.Set(tc.header[i], tc.header[i+1])
		}
		status, h, v := do(t, req)
		if err := checkError(shapeOf(tc.path), v, tc.code, tc.msg); status != tc.status || err != nil || h.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s %.60s: %d %v (%v), want %d %q %q", tc.method, tc.path, tc.body, status, v, err, tc.status, tc.code, tc.msg)
		}
	}
	// health and metrics need no key
	for _, path := range []string{"/health", "/metrics"} {
		req, _ := http.NewRequest(http.MethodGet, r.url+path, nil)
		if status, _, _ := do(t, req); status != 200 {
			t.Errorf("%s without a key: %d", path, status)
		}
	}
}

// checkError says how v, a decoded error body, differs from its shape with code and a message holding msg.
func checkError(sh shape, v any, code, msg string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("not a JSON object")
	}
	switch sh {
	case openAIShape:
		inner, ok := m["error"].(map[string]any)
		if !ok || len(m) != 1 || len(inner) != 4 {
			return fmt.Errorf("not OpenAI's nested error")
		}
		if _, ok := inner["type"].(string); !ok || inner["code"] != code || !strings.Contains(fmt.Sprint(inner["message"]), msg) {
			return fmt.Errorf("code %v message %v", inner["code"], inner["message"])
		}
	case teiShape:
		if len(m) != 2 || m["error_type"] != code || !strings.Contains(fmt.Sprint(m["error"]), msg) {
			return fmt.Errorf("not TEI's {error, error_type}")
		}
	case ollamaShape:
		if len(m) != 1 || !strings.Contains(fmt.Sprint(m["error"]), msg) {
			return fmt.Errorf("not Ollama's {error}")
		}
	}
	return nil
}

// Many clients at once, each with its own texts, each get their own vectors.
func TestConcurrentClients(t *testing.T) {
	e := tinyEmbedder(t)
	cfg := testConfig()
	cfg.MaxBatchSize = 8
	r := start(t, cfg, e, nil)
	pool := append(append([]string(nil), texts...), "a", "bus to the airport", "two tickets please", "no thanks, that is all")
	want := map[string][]float32{}
	for _, s := range pool {
		want[s] = reference(t, e, s)
	}
	var wg sync.WaitGroup
	for c := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := []string{pool[c%len(pool)], pool[(c*7+3)%len(pool)], pool[(c*5+1)%len(pool)]}
			body, _ := json.Marshal(map[string]any{"input": mine})
			res, err := http.Post(r.url+"/v1/embeddings", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			var raw struct {
				Data []struct {
					Index     int       `json:"index"`
					Embedding []float32 `json:"embedding"`
				} `json:"data"`
			}
			if err := json.NewDecoder(res.Body).Decode(&raw); err != nil || res.StatusCode != 200 || len(raw.Data) != 3 {
				t.Errorf("client %d: %d %v", c, res.StatusCode, err)
				return
			}
			for i, d := range raw.Data {
				if err := near(d.Embedding, want[mine[i]], 1e-5); err != nil || d.Index != i {
					t.Errorf("client %d input %d: %v", c, i, err)
				}
			}
		}()
	}
	wg.Wait()
}

// A client that disconnects while its inputs wait is dropped before their forward pass, and counted; the
// server goes on answering.
func TestClientDisconnect(t *testing.T) {
	e := tinyEmbedder(t)
	g := newGate()
	r := start(t, testConfig(), e, g.wrap)
	first := make(chan int, 1)
	go func() {
		status, _, _ := post(t, r.url, "/embed", `{"inputs": "first"}`)
		first <- status
	}()
	<-g.entered // "first" is in its forward pass, held
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url+"/embed", strings.NewReader(`{"inputs": ["gone", "away"]}`))
	gone := make(chan error, 1)
	go func() {
		_, err := http.DefaultClient.Do(req)
		gone <- err
	}()
	poll(t, "the leaving client's inputs to queue", func() bool { return value(t, r.s.m.queued) == 2 })
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("the cancelled request got an answer")
	}
	poll(t, "the server to see the client leave", func() bool { return value(t, r.s.m.failures.WithLabelValues("/embed", string(KindGone))) == 1 })
	close(g.open)
	if status := <-first; status != 200 {
		t.Errorf("the first request: %d", status)
	}
	poll(t, "the dropped inputs", func() bool { return value(t, r.s.m.dropped) == 2 })
	g.mu.Lock()
	for _, rows := range g.seen {
		if len(rows) != 1 {
			t.Errorf("a forward pass ran %d rows: the gone client's inputs were not dropped", len(rows))
		}
	}
	g.mu.Unlock()
	if status, _, _ := post(t, r.url, "/embed", `{"inputs": "after"}`); status != 200 {
		t.Errorf("after a disconnect: %d", status)
	}
}

// More inputs in flight than the limit: 429 at once, with Retry-After, in the route's shape.
func TestOverloaded(t *testing.T) {
	e := tinyEmbedder(t)
	cfg := testConfig()
	cfg.MaxConcurrentInputs, cfg.MaxClientBatchSize = 2, 2
	g := newGate()
	r := start(t, cfg, e, g.wrap)
	held := make(chan int, 1)
	go func() {
		status, _, _ := post(t, r.url, "/v1/embeddings", `{"input": ["a", "b"]}`)
		held <- status
	}()
	<-g.entered
	began := time.Now()
	status, h, v := post(t, r.url, "/v1/embeddings", `{"input": "c"}`)
	if err := checkError(openAIShape, v, "rate_limit_exceeded", "limit of 2 inputs in flight"); status != 429 || h.Get("Retry-After") == "" || err != nil || time.Since(began) > 2*time.Second {
		t.Errorf("over the limit: %d %v %v (Retry-After %q)", status, v, err, h.Get("Retry-After"))
	}
	status, _, v = post(t, r.url, "/api/embed", `{"input": "c"}`)
	if status != 429 || checkError(ollamaShape, v, "", "--max-concurrent-inputs") != nil {
		t.Errorf("Ollama over the limit: %d %v", status, v)
	}
	close(g.open)
	if status := <-held; status != 200 {
		t.Errorf("the held request: %d", status)
	}
	if status, _, _ := post(t, r.url, "/v1/embeddings", `{"input": "c"}`); status != 200 {
		t.Errorf("after the held request: %d", status)
	}
}

// Draining: a request in flight finishes, health answers 503, Serve returns nil, new connections are refused.
func TestDrain(t *testing.T) {
	e := tinyEmbedder(t)
	g := newGate()
	r := start(t, testConfig(), e, g.wrap)
	held := make(chan int, 1)
	go func() {
		status, _, _ := post(t, r.url, "/v1/embeddings", `{"input": "in flight"}`)
		held <- status
	}()
	<-g.entered
	stopped := make(chan error, 1)
	go func() { stopped <- r.stop() }()
	poll(t, "the drain to start", r.s.draining.Load)
	rec := httptest.NewRecorder()
	r.s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "shutting down") {
		t.Errorf("health while draining: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	r.s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/embed", strings.NewReader(`{"inputs": "x"}`)))
	if rec.Code != 503 {
		t.Errorf("a new request while draining: %d", rec.Code)
	}
	close(g.open)
	if status := <-held; status != 200 {
		t.Errorf("the request in flight: %d, want 200", status)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := http.Get(r.url + "/health"); err == nil {
		t.Error("a stopped server still accepts connections")
	}
}

// A client that sends its headers one byte at a time (slowloris) is cut off at the read-header timeout.
func TestSlowClientIsCutOff(t *testing.T) {
	e := tinyEmbedder(t)
	cfg := testConfig()
	cfg.ReadHeaderTimeout = 300 * time.Millisecond
	r := start(t, cfg, e, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	began := time.Now()
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, conn)
		close(closed)
	}()
	for _, b := range []byte("POST /embed HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") {
		select {
		case <-closed:
			if d := time.Since(began); d > 3*time.Second {
				t.Errorf("cut off after %v", d)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
		conn.Write([]byte{b})
	}
	t.Errorf("a client sending a byte every 100 ms held its connection for %v", time.Since(began))
}

// A panic in a handler is answered 500 in the route's shape, and the server keeps serving.
func TestPanicIsRecovered(t *testing.T) {
	e := tinyEmbedder(t)
	r := start(t, testConfig(), e, func(s *Server) {
		s.route("POST", "/v1/panic", true, false, func(http.ResponseWriter, *http.Request) *apiError { panic("boom") })
	})
	status, _, v := post(t, r.url, "/v1/panic", `{}`)
	if status != 500 || checkError(openAIShape, v, "internal_error", "recovered from a panic") != nil {
		t.Errorf("panic: %d %v", status, v)
	}
	if status, _, _ := post(t, r.url, "/embed", `{"inputs": "still here"}`); status != 200 {
		t.Errorf("after a panic: %d", status)
	}
}

// Before the warm-up forward pass every route but /metrics answers 503.
func TestWarmingUp(t *testing.T) {
	s, err := New(testConfig(), tinyEmbedder(t), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/health", "/embed", "/v1/embeddings", "/info"} {
		rec := httptest.NewRecorder()
		method := http.MethodPost
		if path == "/health" || path == "/info" {
			method = http.MethodGet
		}
		s.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(`{"input": "x"}`)))
		if rec.Code != 503 || !strings.Contains(rec.Body.String(), "warming up") || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s before the warm-up: %d %s", path, rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != 200 {
		t.Errorf("/metrics before the warm-up: %d", rec.Code)
	}
}

// The metrics count requests and failures by route and kind, and time each stage.
func TestMetrics(t *testing.T) {
	r := start(t, testConfig(), tinyEmbedder(t), nil)
	post(t, r.url, "/v1/embeddings", `{"input": ["a", "b c"]}`)
	post(t, r.url, "/v1/embeddings", `{"input": []}`)
	res, err := http.Get(r.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var lines []string
	for sc := bufio.NewScanner(res.Body); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		`convrep_serve_requests_total{route="/v1/embeddings"} 2`,
		`convrep_serve_request_failures_total{kind="empty",route="/v1/embeddings"} 1`,
		`convrep_serve_tokenize_duration_seconds_count 1`, // the empty list fails before
		`convrep_serve_queue_duration_seconds_count 3`,    // the warm-up's input and the two
		`convrep_serve_inference_duration_seconds_count 2`,
		`convrep_serve_batch_rows_sum 3`,
		`convrep_serve_queue_inputs 0`,
		`convrep_serve_inputs_in_flight 0`,
		`convrep_serve_dropped_inputs_total 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in /metrics", want)
		}
	}
}

// CORS: an allowed origin's preflight is answered 204 without a key; answers carry the origin.
func TestCORS(t *testing.T) {
	cfg := testConfig()
	cfg.CORSAllowOrigin, cfg.APIKey = "https://a.example, https://b.example", "k"
	r := start(t, cfg, tinyEmbedder(t), nil)
	req, _ := http.NewRequest(http.MethodOptions, r.url+"/v1/embeddings", nil)
	req.Header.Set("Origin", "https://b.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	status, h, _ := do(t, req)
	if status != 204 || h.Get("Access-Control-Allow-Origin") != "https://b.example" || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", status, h)
	}
	_, h, _ = post(t, r.url, "/embed", `{"inputs": "x"}`, "Origin", "https://evil.example", "Authorization", "Bearer k")
	if h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an origin not allowed got %q", h.Get("Access-Control-Allow-Origin"))
	}
}

// New refuses limits that cannot work, naming the flag.
func TestConfigCheck(t *testing.T) {
	e := tinyEmbedder(t)
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.MaxBatchTokens = 32 }, "--max-batch-tokens 32 is less than the longest input, 64 tokens"},
		{func(c *Config) { c.MaxConcurrentInputs = 10 }, "--max-concurrent-inputs 10 is less than --max-client-batch-size 2048"},
		{func(c *Config) { c.MaxBatchSize = 0 }, "--max-batch-size 0: must be at least 1"},
		{func(c *Config) { c.DrainTimeout = 0 }, "--drain-timeout"},
		{func(c *Config) { c.ModelName = "" }, "--served-model-name"},
	} {
		c := testConfig()
		tc.set(&c)
		if _, err := New(c, e, zap.NewNop()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}
