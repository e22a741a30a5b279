package suite

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/modelref"
)

// prepared is a task whose model reference and options have been checked; only the model is left to load.
type prepared struct {
	c     *Common
	seeds []uint64
}

// prepare checks c's model reference (--model, --checkpoint, --head) before any data are read.
func prepare(c *Common) (*prepared, error) {
	if err := modelref.Check(c.Model.Ref, c.Model.Checkpoint); err != nil {
		return nil, err
	}
	if c.Model.Head != "" && c.Model.Checkpoint == "" {
		return nil, fmt.Errorf("--head %s reads the head from --checkpoint, and none is given", c.Model.Head)
	}
	return &prepared{c: c, seeds: c.Seeds}, nil
}

// session loads the model; progress goes to stderr unless --quiet.
func (p *prepared) session(ctx context.Context, log *zap.Logger) (*evaluate.Session, error) {
	s, err := Open(ctx, p.c.Model, log)
	if err != nil {
		return nil, err
	}
	if !p.c.Quiet {
		s.Progress = os.Stderr
	}
	return s, nil
}

// checkShots refuses a shot count that no label of train (read from source) can fill, naming the largest that
// can be, and warns, naming the labels and their counts, where a label has fewer rows than a shot count asks:
// its support sets then hold all its rows, and the result records the shots used.
func checkShots(log *zap.Logger, source string, train evaluate.Split, shots []int) error {
	if err := evaluate.CheckShots(train, shots); err != nil {
		return fmt.Errorf("--shots: %s: %w", source, err)
	}
	labels := len(train.Labels())
	for _, k := range shots {
		if short := evaluate.Shortfall(train, k); len(short) > 0 {
			log.Warn(fmt.Sprintf("%s: %d-shot: %d of %d labels have fewer than %d training rows; their support sets hold all the rows they have, "+
				"and the result records the shots used (shots_used): %s", source, k, len(short), labels, k, evaluate.ListLabelRows(short, 20)),
				zap.Int("shots", k), zap.Int("short_labels", len(short)))
		}
	}
	return nil
}
