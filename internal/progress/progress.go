// Package progress draws the bar convrep shows on long work (embedding, training): count, rate and time left,
// on a terminal writer, redrawn at most ten times a second. A nil writer draws nothing.
package progress

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Bar counts units of work (texts, pairs, steps) towards a known total.
type Bar struct {
	bar *progressbar.ProgressBar
}

// New starts a bar of total units named unit ("texts", "steps"), already at start (a resumed run).
func New(w io.Writer, desc, unit string, total, start int64) *Bar {
	if w == nil || total <= 0 {
		return &Bar{}
	}
	b := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)
	if start > 0 {
		_ = b.Set64(start)
		b.Reset() // rate and ETA count only this run's work
		_ = b.Set64(start)
	}
	return &Bar{bar: b}
}

// Add advances the bar by n units.
func (b *Bar) Add(n int) {
	if b.bar != nil {
		_ = b.bar.Add(n) // a drawing error must not stop the work
	}
}

// Describe replaces the text before the bar, e.g. with the current loss.
func (b *Bar) Describe(s string) {
	if b.bar != nil {
		b.bar.Describe(s)
	}
}

// Finish completes the bar and ends its line.
func (b *Bar) Finish() {
	if b.bar != nil {
		_ = b.bar.Finish()
	}
}
