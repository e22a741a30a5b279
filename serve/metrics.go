package serve

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are a Server's Prometheus series, in a registry of its own (two servers in one process do not
// share counts), named convrep_serve_*.
type metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec   // route
	failures    *prometheus.CounterVec   // route, kind
	duration    *prometheus.HistogramVec // route
	tokenize    prometheus.Histogram     // per request
	queue       prometheus.Histogram     // per input, from submit to its forward pass
	inference   prometheus.Histogram     // per forward pass
	batchRows   prometheus.Histogram
	batchTokens prometheus.Histogram // rows × longest row
	queued      prometheus.Gauge     // inputs waiting for their forward pass
	inFlight    prometheus.Gauge     // inputs admitted and not yet answered
	dropped     prometheus.Counter   // inputs dropped before their forward pass: the client had gone
	tokens      prometheus.Counter   // input tokens embedded
}

// stageBuckets span 0.1 ms to about 26 s.
var stageBuckets = prometheus.ExponentialBuckets(0.0001, 2, 19)

func newMetrics() *metrics {
	const ns = "convrep_serve"
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "Requests received, by route."}, []string{"route"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "request_failures_total",
			Help: "Requests that failed, by route and kind of error (validation, too_large, overloaded, client_gone, ...)."}, []string{"route", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "request_duration_seconds",
			Help: "Time from a request's arrival to its answer, by route.", Buckets: stageBuckets}, []string{"route"}),
		tokenize: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "tokenize_duration_seconds",
			Help: "Time to tokenise one request's inputs.", Buckets: stageBuckets}),
		queue: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "queue_duration_seconds",
			Help: "Time an input waited in the queue before its forward pass.", Buckets: stageBuckets}),
		inference: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "inference_duration_seconds",
			Help: "Time of one forward pass (one batch).", Buckets: stageBuckets}),
		batchRows: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "batch_rows",
			Help: "Inputs per forward pass.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)}),
		batchTokens: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "batch_tokens",
			Help: "Padded tokens per forward pass (rows × longest row).", Buckets: prometheus.ExponentialBuckets(8, 2, 16)}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "queue_inputs",
			Help: "Inputs waiting for their forward pass."}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "inputs_in_flight",
			Help: "Inputs admitted and not yet answered (bounded by --max-concurrent-inputs)."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "dropped_inputs_total",
			Help: "Inputs dropped before their forward pass because their client had gone."}),
		tokens: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "input_tokens_total",
			Help: "Input tokens embedded, special tokens included."}),
	}
	m.reg.MustRegister(m.requests, m.failures, m.duration, m.tokenize, m.queue, m.inference, m.batchRows, m.batchTokens,
		m.queued, m.inFlight, m.dropped, m.tokens, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the metrics in Prometheus' text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
