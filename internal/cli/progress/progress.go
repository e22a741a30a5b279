// Package progress shows how far long work (training, embedding, fine-tuning) has come: count, rate and time
// left. On a terminal it is a bar redrawn in place at most ten times a second; elsewhere (a batch job's log,
// `make compare >log`) it is a plain line at most every 30 seconds or every tenth of the work, as log-friendly
// tools print, so that a log file holds no carriage-return frames. A nil writer shows nothing.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

const (
	redraw    = 100 * time.Millisecond // the terminal bar's fastest redraw
	lineEvery = 30 * time.Second       // a plain line at least this far apart, unless a tenth of the work passed
	width     = 30                     // the bar's cells
	// A rate needs this many units and this much time behind it: the first step of a run, timed from
	// nothing, would read "141163 steps/s".
	rateUnits   = 3
	rateElapsed = 500 * time.Millisecond
)

// Bar counts units of work (texts, pairs, steps) towards a known total.
type Bar struct {
	mu         sync.Mutex
	w          io.Writer
	terminal   bool
	now        func() time.Time
	desc, unit string
	note       string // Describe's text, e.g. the current loss
	total      int64
	start      int64 // units done before this run (a resumed run); the rate counts only this run's
	n          int64
	began      time.Time
	drawn      time.Time // last frame or line
	tenth      int64     // the tenths of the work the last plain line had reached
	cells      int       // the width of the last terminal frame, to blank a shorter one
	finished   bool
}

// New starts a bar of total units named unit ("texts", "steps"), already at start (a resumed run). It draws a
// bar when w is a terminal and plain lines otherwise.
func New(w io.Writer, desc, unit string, total, start int64) *Bar {
	f, ok := w.(*os.File)
	return newBar(w, ok && term.IsTerminal(int(f.Fd())), time.Now, desc, unit, total, start)
}

func newBar(w io.Writer, terminal bool, now func() time.Time, desc, unit string, total, start int64) *Bar {
	if w == nil || total <= 0 {
		return &Bar{}
	}
	start = min(max(start, 0), total)
	t0 := now()
	b := &Bar{w: w, terminal: terminal, now: now, desc: desc, unit: unit, total: total, start: start, n: start, began: t0, drawn: t0}
	b.tenth = b.n * 10 / total
	if terminal {
		b.frame()
	}
	return b
}

// Add advances the bar by n units.
func (b *Bar) Add(n int) {
	if b.w == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.n = min(b.n+int64(n), b.total)
	now := b.now()
	switch {
	case b.terminal && now.Sub(b.drawn) >= redraw:
		b.frame()
	case !b.terminal && b.n < b.total && (now.Sub(b.drawn) >= lineEvery || b.n*10/b.total > b.tenth):
		b.line()
	}
}

// Describe replaces the text shown after the count, e.g. with the current loss.
func (b *Bar) Describe(s string) {
	if b.w == nil {
		return
	}
	b.mu.Lock()
	b.note = s
	b.mu.Unlock()
}

// Finish draws the final state and ends the bar's line; later calls do nothing.
func (b *Bar) Finish() {
	if b.w == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.finished = true
	if b.terminal {
		b.frame()
		fmt.Fprintln(b.w)
		return
	}
	b.line()
}

// frame redraws the terminal bar in place: "training  37% [=========>            ] 74/200 3.1 steps/s 41s left loss 0.41".
func (b *Bar) frame() {
	b.drawn = b.now()
	done := int(b.n * width / b.total)
	cells := strings.Repeat("=", done)
	if done < width {
		cells += ">" + strings.Repeat(" ", width-done-1)
	}
	s := fmt.Sprintf("%s %3d%% [%s] %s", b.desc, b.n*100/b.total, cells, strings.Join(b.status(), " "))
	pad := max(b.cells-len(s), 0)
	b.cells = len(s)
	fmt.Fprintf(b.w, "\r%s%s", s, strings.Repeat(" ", pad))
}

// line prints one plain progress line: "training: 74/200 (37%), 3.1 steps/s, 41s left, loss 0.41".
func (b *Bar) line() {
	b.drawn = b.now()
	b.tenth = b.n * 10 / b.total
	parts := b.status()
	parts[0] = fmt.Sprintf("%s (%d%%)", parts[0], b.n*100/b.total)
	fmt.Fprintf(b.w, "%s: %s\n", b.desc, strings.Join(parts, ", "))
}

// status is the count, then the rate and the time left once there is a rate to tell, then Describe's note:
// "74/200", "3.1 steps/s", "41s left", "loss 0.41". A finished bar gives the time taken instead of the time left.
func (b *Bar) status() []string {
	parts := []string{fmt.Sprintf("%d/%d", b.n, b.total)}
	elapsed := b.now().Sub(b.began)
	if did := b.n - b.start; did >= rateUnits && elapsed >= rateElapsed {
		rate := float64(did) / elapsed.Seconds()
		parts = append(parts, rateString(rate)+" "+b.unit+"/s")
		if b.n >= b.total || b.finished {
			parts = append(parts, "in "+durationString(elapsed))
		} else {
			parts = append(parts, durationString(time.Duration(float64(b.total-b.n)/rate*float64(time.Second)))+" left")
		}
	}
	if b.note != "" {
		parts = append(parts, b.note)
	}
	return parts
}

// rateString keeps three significant figures, whatever the rate's size.
func rateString(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	default:
		return fmt.Sprintf("%.2f", r)
	}
}

// durationString is a duration to the second, as people read one: 41s, 3m05s, 2h07m.
func durationString(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
}
