package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Default timeouts, close to huggingface_hub's HF_HUB_DOWNLOAD_TIMEOUT.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultIdleTimeout    = 30 * time.Second
)

// TimeoutError says a request to URL got nothing for After: no TCP
// connection (Phase "connect") or no byte of the answer (Phase "idle").
type TimeoutError struct {
	Method string
	URL    string
	Phase  string
	After  time.Duration
}

func (e *TimeoutError) Error() string {
	if e.Phase == "connect" {
		return fmt.Sprintf("%s %s: no connection within %v (connect timeout)", e.Method, e.URL, e.After)
	}
	return fmt.Sprintf("%s %s: no data received for %v (idle timeout)", e.Method, e.URL, e.After)
}

// Timeout lets net.Error-style checks see it as a timeout.
func (e *TimeoutError) Timeout() bool { return true }

// dialContext opens TCP connections; tests replace it to simulate a server
// that never accepts.
var dialContext = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext

// errConnectTimeout marks a dial that ran out of time; fetchOnce turns it
// into a *TimeoutError naming the URL.
var errConnectTimeout = errors.New("connect timeout")

// newTransport is http.DefaultTransport with a bounded dial.
func newTransport(connect time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dctx, cancel := context.WithTimeout(ctx, connect)
		defer cancel()
		c, err := dialContext(dctx, network, addr)
		if err != nil && ctx.Err() == nil && dctx.Err() != nil {
			return nil, fmt.Errorf("dial %s %s: %w", network, addr, errConnectTimeout)
		}
		return c, err
	}
	return t
}

// watchdog cancels a request's context when no byte arrives for idle: while
// waiting for the response headers and between reads of the body.
type watchdog struct {
	timer *time.Timer
	idle  time.Duration
}

// startWatchdog returns the context to send the request with. stop must be
// called once the body is closed.
func startWatchdog(ctx context.Context, method, u string, idle time.Duration) (context.Context, *watchdog, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	timeout := &TimeoutError{Method: method, URL: u, Phase: "idle", After: idle}
	w := &watchdog{idle: idle, timer: time.AfterFunc(idle, func() { cancel(timeout) })}
	return ctx, w, func() { w.timer.Stop(); cancel(nil) }
}

// body wraps a response body so that each byte received pushes the deadline.
func (w *watchdog) body(r io.Reader) io.Reader { return &watchedReader{r: r, w: w} }

type watchedReader struct {
	r io.Reader
	w *watchdog
}

func (r *watchedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.w.timer.Reset(r.w.idle)
	}
	return n, err
}

// timeoutCause returns the *TimeoutError behind err, if the watchdog fired
// or the dial timed out, so callers report it instead of "context canceled".
func timeoutCause(ctx context.Context, err error, method, u string, connect time.Duration) error {
	var te *TimeoutError
	if errors.As(context.Cause(ctx), &te) {
		return te
	}
	if errors.Is(err, errConnectTimeout) {
		return &TimeoutError{Method: method, URL: u, Phase: "connect", After: connect}
	}
	return nil
}
