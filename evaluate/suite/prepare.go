package suite

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/modelref"
)

// prepared is a task whose data, splits and flags have been checked; only the model is left to load.
type prepared struct {
	c     *Common
	seeds []uint64
	shots []int
}

func prepare(c *Common, withShots bool, shots string) (*prepared, error) {
	if err := modelref.Check(c.Model.Ref, c.Model.Checkpoint); err != nil {
		return nil, err
	}
	if c.Model.Head != "" && c.Model.Checkpoint == "" {
		return nil, fmt.Errorf("--head %s reads the head from --checkpoint, and none is given", c.Model.Head)
	}
	p := &prepared{c: c}
	var err error
	if p.seeds, err = ParseSeeds(c.Seeds); err != nil {
		return nil, err
	}
	if withShots {
		if p.shots, err = parseShots(shots); err != nil {
			return nil, err
		}
	}
	return p, nil
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

// Intent runs evaluate intent with c and the task's own settings (cmd/internal/evaluatecmd parses them).
func Intent(ctx context.Context, c *Common, shots string, log *zap.Logger) error {
	p, err := prepare(c, true, shots)
	if err != nil {
		return err
	}
	name, source, train, test, _, err := c.Data.intentData()
	if err != nil {
		return err
	}
	if err := evaluate.CheckQueryLabels(train, test); err != nil {
		return fmt.Errorf("%s: test %w", name, err)
	}
	if err := checkShots(log, source, train, p.shots); err != nil {
		return err
	}
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	res, err := s.Intent(ctx, evaluate.IntentTask{Dataset: name, Source: source, Train: train, Test: test, Shots: p.shots, Seeds: p.seeds, Splits: c.splitIO()})
	if err != nil {
		return err
	}
	return writeResult(res, c.Output)
}

// OOS runs evaluate oos with c and the task's own settings (cmd/internal/evaluatecmd parses them).
func OOS(ctx context.Context, c *Common, shots string, protocol string, log *zap.Logger) error {
	if c.Data.Dataset == "" && c.Data.Train == "" {
		c.Data.Dataset = "clinc150"
	}
	p, err := prepare(c, true, shots)
	if err != nil {
		return err
	}
	task, err := c.Data.oosTask(protocol)
	if err != nil {
		return err
	}
	if err := evaluate.CheckQueryLabels(task.Train, task.Test); err != nil {
		return fmt.Errorf("%s: in-scope test %w", task.Dataset, err)
	}
	task.Shots, task.Seeds, task.Splits = p.shots, p.seeds, c.splitIO()
	if err := checkShots(log, task.Source, task.SupportRows(), p.shots); err != nil {
		return err
	}
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	res, err := s.OOS(ctx, task)
	if err != nil {
		return err
	}
	return writeResult(res, c.Output)
}

// Response runs evaluate response with c and the task's own settings (cmd/internal/evaluatecmd parses them).
func Response(ctx context.Context, c *Common, size int, name string, log *zap.Logger) error {
	if err := c.Data.checkSplit(); err != nil {
		return err
	}
	if c.Data.Test != "" && c.Data.Split != "test" {
		return fmt.Errorf("--split %s goes with --dataset multiwoz; a --test file is read as it is", c.Data.Split)
	}
	c.Model.Dual = true // an MGT dual encoder scores by cᵀr with both its encoders (Eq. 4)
	members, err := EnsembleMembers(c.Model)
	if err != nil {
		return err
	}
	first := *c
	first.Model = members[0] // prepare checks one member; EnsembleMembers checked them all
	p, err := prepare(&first, false, "")
	if err != nil {
		return err
	}
	set, err := c.Data.responseData()
	if err != nil {
		return err
	}
	if len(set.Responses) < size {
		return fmt.Errorf("%s: %d responses, fewer than --candidates %d", set.Dataset, len(set.Responses), size)
	}
	task := evaluate.ResponseTask{Set: set, Size: size, Seeds: p.seeds, Splits: c.splitIO()}
	if len(members) > 1 {
		return runEnsemble(ctx, members, c.Quiet, task, name, c.Output, log)
	}
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	res, err := s.Response(ctx, task)
	if err != nil {
		return err
	}
	return writeResult(renamed(res, name), c.Output)
}
