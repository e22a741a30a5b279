package progress

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

// clock is a fake time source that tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// step is one call on a bar: a pause, then Add(n) (or Describe(note), or Finish).
type step struct {
	wait   time.Duration
	add    int
	note   string
	finish bool
}

func run(terminal bool, total, start int64, steps []step) string {
	var out bytes.Buffer
	c := &clock{t: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)}
	b := newBar(&out, terminal, c.now, "training", "steps", total, start)
	for _, s := range steps {
		c.t = c.t.Add(s.wait)
		switch {
		case s.finish:
			b.Finish()
		case s.note != "":
			b.Describe(s.note)
		default:
			b.Add(s.add)
		}
	}
	return out.String()
}

// every gives n calls of Add(1), each after wait.
func every(n int, wait time.Duration) []step {
	var s []step
	for range n {
		s = append(s, step{wait: wait, add: 1})
	}
	return s
}

func TestPlainLines(t *testing.T) {
	cases := []struct {
		name  string
		total int64
		start int64
		steps []step
		want  []string
	}{
		{
			name:  "a line each tenth, none with a rate before there is one, a last line with the time taken",
			total: 20,
			steps: append(every(20, time.Second), step{finish: true}),
			want: []string{
				"training: 2/20 (10%)",
				"training: 4/20 (20%), 1.00 steps/s, 16s left",
				"training: 6/20 (30%), 1.00 steps/s, 14s left",
				"training: 8/20 (40%), 1.00 steps/s, 12s left",
				"training: 10/20 (50%), 1.00 steps/s, 10s left",
				"training: 12/20 (60%), 1.00 steps/s, 8s left",
				"training: 14/20 (70%), 1.00 steps/s, 6s left",
				"training: 16/20 (80%), 1.00 steps/s, 4s left",
				"training: 18/20 (90%), 1.00 steps/s, 2s left",
				"training: 20/20 (100%), 1.00 steps/s, in 20s",
			},
		},
		{
			name:  "slow work: a line every 30 s between tenths",
			total: 1000,
			steps: append(every(5, 20*time.Second), step{note: "loss 0.4123"}, step{finish: true}),
			want: []string{
				"training: 2/1000 (0%)",
				"training: 4/1000 (0%), 0.05 steps/s, 5h32m left",
				"training: 5/1000 (0%), 0.05 steps/s, in 1m40s, loss 0.4123",
			},
		},
		{
			name:  "fast work: ten lines for a thousand steps, not a thousand",
			total: 1000,
			steps: append(every(1000, time.Millisecond), step{finish: true}),
			want: []string{
				"training: 100/1000 (10%)",
				"training: 200/1000 (20%)",
				"training: 300/1000 (30%)",
				"training: 400/1000 (40%)",
				"training: 500/1000 (50%), 1000 steps/s, 1s left",
				"training: 600/1000 (60%), 1000 steps/s, 0s left",
				"training: 700/1000 (70%), 1000 steps/s, 0s left",
				"training: 800/1000 (80%), 1000 steps/s, 0s left",
				"training: 900/1000 (90%), 1000 steps/s, 0s left",
				"training: 1000/1000 (100%), 1000 steps/s, in 1s",
			},
		},
		{
			name:  "a resumed run rates only its own steps",
			total: 100,
			start: 50,
			steps: append(every(10, 2*time.Second), step{finish: true}),
			want: []string{
				"training: 60/100 (60%), 0.50 steps/s, 1m20s left",
				"training: 60/100 (60%), 0.50 steps/s, in 20s",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Split(strings.TrimSuffix(run(false, tc.total, tc.start, tc.steps), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestTerminalBar(t *testing.T) {
	out := run(true, 200, 0, append(every(200, 50*time.Millisecond), step{note: "loss 0.4123"}, step{finish: true}))
	frames := strings.Split(strings.TrimSuffix(out, "\n"), "\r")[1:]
	if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("want one newline, at the end: %q", out)
	}
	// One frame at the start, one per 100 ms after (two Adds apart), and the last.
	if len(frames) != 1+100+1 {
		t.Errorf("%d frames, want %d", len(frames), 102)
	}
	first := regexp.MustCompile(`^training   0% \[> {29}\] 0/200 *$`)
	if !first.MatchString(frames[0]) {
		t.Errorf("first frame %q", frames[0])
	}
	// The first ticks show no rate: one step timed from nothing would claim thousands of steps/s.
	for _, f := range frames[:5] {
		if strings.Contains(f, "/s") {
			t.Errorf("early frame %q shows a rate", f)
		}
	}
	last := "training 100% [==============================] 200/200 20.0 steps/s in 10s loss 0.4123"
	if got := strings.TrimRight(frames[len(frames)-1], " "); got != last {
		t.Errorf("last frame %q, want %q", got, last)
	}
	mid := regexp.MustCompile(`^training  50% \[={15}> {14}\] 100/200 20\.0 steps/s 5s left *$`)
	if !mid.MatchString(frames[50]) {
		t.Errorf("frame 50 %q", frames[50])
	}
}

// A nil writer or an empty total draws nothing and every call is safe.
func TestSilentBar(t *testing.T) {
	for _, b := range []*Bar{New(nil, "x", "steps", 10, 0), New(&bytes.Buffer{}, "x", "steps", 0, 0)} {
		b.Add(3)
		b.Describe("loss 1")
		b.Finish()
	}
	var out bytes.Buffer
	b := New(&out, "training", "steps", 10, 0) // a buffer is no terminal: plain lines
	b.Finish()
	b.Finish()
	b.Add(1)
	if out.String() != "training: 0/10 (0%)\n" {
		t.Errorf("output %q", out.String())
	}
}
