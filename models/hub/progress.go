package hub

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress draws one file's download bar: bytes, rate and time left. A nil
// writer makes it a no-op.
type progress struct {
	bar *progressbar.ProgressBar
}

// newProgress starts a bar for name. When resuming, the bar counts only the
// bytes still to come, so rate and ETA describe this transfer.
func newProgress(w io.Writer, name string, offset, total int64) (p *progress) {
	p = &progress{}
	if w == nil {
		return p
	}
	remaining := int64(-1)
	desc := name
	if total >= 0 {
		remaining = total - offset
		if remaining <= 0 {
			return p // nothing to draw, and progressbar refuses a zero max
		}
	}
	if offset > 0 {
		desc = fmt.Sprintf("%s (resuming at %d bytes)", name, offset)
	}
	// progressbar panics on invalid options; a bar is not worth a crash.
	defer func() {
		if r := recover(); r != nil {
			p = &progress{}
		}
	}()
	p.bar = progressbar.NewOptions64(remaining,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		// No spinner goroutine for unknown sizes: every write to w happens
		// on the downloading goroutine, and none after done.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)
	return p
}

func (p *progress) Write(b []byte) (int, error) {
	if p.bar != nil {
		p.bar.Add64(int64(len(b))) // drawing errors must not fail the download
	}
	return len(b), nil
}

// done draws the final state: a full bar when ok, the current one otherwise.
func (p *progress) done(ok bool) {
	if p.bar == nil {
		return
	}
	if ok {
		p.bar.Finish()
		return
	}
	p.bar.Exit()
}
