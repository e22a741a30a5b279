package benchcmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"convrep/trainer"
)

// lossLog is --losses: each timed step's loss as a JSON line, to compare two runs of the same seed step by step
// (scripts/gpu_check.sh compares the fused kernels with the composites so). A nil lossLog writes nothing.
type lossLog struct {
	f *os.File
	w *bufio.Writer
}

func openLossLog(path string) (*lossLog, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--losses: %w", err)
	}
	return &lossLog{f: f, w: bufio.NewWriter(f)}, nil
}

// write reads the loss of the step just taken (the stepper's tally, reset before it) and writes its line.
func (l *lossLog) write(step int, s *trainer.Stepper) error {
	loss, err := s.ReadLoss()
	if err != nil {
		return err
	}
	line, err := json.Marshal(struct {
		Step int     `json:"step"`
		Loss float64 `json:"loss"`
	}{step, loss})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(l.w, "%s\n", line)
	return err
}

// close flushes and closes the file; once closed, a second call does nothing.
func (l *lossLog) close() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.w.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
