package benchcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"
)

// cell is one load of bench serve: clients closed-loop clients, each sending requests of inputs texts drawn
// in turn from texts, back to back, for a duration after a warm-up.
type cell struct {
	Concurrency int    `json:"concurrency"`
	Inputs      int    `json:"inputs_per_request"`
	Length      string `json:"length"` // short or long
}

// cellResult is what a cell measured: rates over the timed window, latency percentiles over the requests that
// finished in it, and the errors by kind (an HTTP status or "transport").
type cellResult struct {
	Kind string `json:"kind"` // "serve"
	cell
	Requests       int            `json:"requests"`
	Seconds        float64        `json:"seconds"`
	RequestsPerS   float64        `json:"requests_per_s"`
	InputsPerS     float64        `json:"inputs_per_s"`
	TokensPerS     float64        `json:"tokens_per_s"`
	P50ms          *float64       `json:"p50_ms"` // null when no request succeeded
	P90ms          *float64       `json:"p90_ms"`
	P99ms          *float64       `json:"p99_ms"`
	Errors         int            `json:"errors"`
	ErrorsByStatus map[string]int `json:"errors_by_kind,omitempty"`
}

// loader sends OpenAI embedding requests to url (the server's /v1/embeddings).
type loader struct {
	url, model, apiKey string
	client             *http.Client
}

// openAIUsage is the part of an OpenAI embeddings answer the load counts.
type openAIUsage struct {
	Data  []json.RawMessage `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

// send posts one request of texts and returns the prompt tokens the server counted, or an error kind.
func (l *loader) send(ctx context.Context, texts []string) (tokens int, errKind string) {
	body, err := json.Marshal(map[string]any{"model": l.model, "input": texts, "encoding_format": "base64"})
	if err != nil {
		return 0, "encode"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(body))
	if err != nil {
		return 0, "request"
	}
	req.Header.Set("Content-Type", "application/json")
	if l.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.apiKey)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, "transport"
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "transport"
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Sprint(resp.StatusCode)
	}
	var u openAIUsage
	if err := json.Unmarshal(data, &u); err != nil || len(u.Data) != len(texts) {
		return 0, "bad answer"
	}
	return u.Usage.PromptTokens, ""
}

// run loads the server as c says for warmup, then for window, and measures the window: the requests that end
// inside it, wherever they started. At the window's end the requests still in flight are cancelled (the server
// drops inputs whose client has gone), so a cell costs warmup + window whatever the server's backlog.
func (l *loader) run(ctx context.Context, c cell, texts []string, warmup, window time.Duration) cellResult {
	type done struct {
		latency time.Duration
		tokens  int
		errKind string
	}
	start := time.Now()
	from, until := start.Add(warmup), start.Add(warmup+window)
	cctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	var mu sync.Mutex
	var got []done
	var wg sync.WaitGroup
	for k := 0; k < c.Concurrency; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			next := k * c.Inputs // each client starts at its own place in texts
			for cctx.Err() == nil {
				batch := make([]string, c.Inputs)
				for i := range batch {
					batch[i] = texts[next%len(texts)]
					next++
				}
				t0 := time.Now()
				tokens, kind := l.send(cctx, batch)
				t1 := time.Now()
				if t1.Before(from) || cctx.Err() != nil { // in the warm-up, or cancelled at the window's end
					continue
				}
				mu.Lock()
				got = append(got, done{t1.Sub(t0), tokens, kind})
				mu.Unlock()
			}
		}(k)
	}
	wg.Wait()
	r := cellResult{Kind: "serve", cell: c, Seconds: window.Seconds(), ErrorsByStatus: map[string]int{}}
	var lat []float64
	tokens := 0
	for _, d := range got {
		if d.errKind != "" {
			r.Errors++
			r.ErrorsByStatus[d.errKind]++
			continue
		}
		r.Requests++
		tokens += d.tokens
		lat = append(lat, float64(d.latency)/float64(time.Millisecond))
	}
	r.RequestsPerS = float64(r.Requests) / r.Seconds
	r.InputsPerS = float64(r.Requests*c.Inputs) / r.Seconds
	r.TokensPerS = float64(tokens) / r.Seconds
	r.P50ms, r.P90ms, r.P99ms = percentile(lat, 50), percentile(lat, 90), percentile(lat, 99)
	if len(r.ErrorsByStatus) == 0 {
		r.ErrorsByStatus = nil
	}
	return r
}

// percentile is the p-th percentile of xs by the nearest-rank method, nil for none; xs is sorted in place.
func percentile(xs []float64, p float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	slices.Sort(xs)
	rank := int(math.Ceil(p / 100 * float64(len(xs))))
	v := xs[min(max(rank, 1), len(xs))-1]
	return &v
}
