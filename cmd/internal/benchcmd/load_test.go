package benchcmd

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoaderCountsAndPercentiles loads a stand-in server that answers every third request 429: the cell counts
// the answered requests, their inputs and the tokens the server reported, and the refusals by status.
func TestLoaderCountsAndPercentiles(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if n.Add(1)%3 == 0 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		time.Sleep(2 * time.Millisecond)
		data := make([]map[string]any, len(req.Input))
		json.NewEncoder(w).Encode(map[string]any{"data": data, "usage": map[string]int{"prompt_tokens": 5 * len(req.Input)}})
	}))
	defer srv.Close()
	l := &loader{url: srv.URL, model: "m", client: srv.Client()}
	r := l.run(context.Background(), cell{Concurrency: 4, Inputs: 3, Length: "short"}, []string{"a", "b"}, 50*time.Millisecond, 300*time.Millisecond)
	if r.Requests == 0 || r.Errors == 0 || r.ErrorsByStatus["429"] != r.Errors {
		t.Fatalf("requests %d, errors %d %v: want both, all 429", r.Requests, r.Errors, r.ErrorsByStatus)
	}
	if want := float64(r.Requests*3) / r.Seconds; r.InputsPerS != want || r.TokensPerS != 5*want {
		t.Errorf("inputs/s %g, tokens/s %g: want %g and %g", r.InputsPerS, r.TokensPerS, want, 5*want)
	}
	if r.P50ms == nil || *r.P50ms < 2 || *r.P99ms < *r.P50ms {
		t.Errorf("p50 %v, p99 %v: want at least the server's 2 ms, p99 ≥ p50", r.P50ms, r.P99ms)
	}
}

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{[]float64{5, 1, 3, 2, 4}, 50, 3},
		{[]float64{5, 1, 3, 2, 4}, 90, 5},
		{[]float64{5, 1, 3, 2, 4}, 0, 1},
		{[]float64{7}, 99, 7},
	} {
		if got := percentile(append([]float64(nil), tc.xs...), tc.p); got == nil || *got != tc.want {
			t.Errorf("percentile(%v, %g) = %v, want %g", tc.xs, tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 50); got != nil {
		t.Errorf("percentile of none = %v, want nil", *got)
	}
}

func TestBenchTexts(t *testing.T) {
	texts, err := benchTexts("", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(texts["short"]) != 100 || len(texts["long"]) != 100 {
		t.Fatalf("%d short and %d long texts, want 100 each", len(texts["short"]), len(texts["long"]))
	}
	if texts["short"][0] != "Are there any eritrean restaurants in town?" {
		t.Errorf("first short text %q: not WOZ 2.0's first user turn", texts["short"][0])
	}
}
