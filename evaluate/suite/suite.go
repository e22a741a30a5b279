// Package suite is convrep's evaluation suite (DSE §4.2 and Appendix B, MGT §4.2 and §5.2-5.3, DialogueCSE
// §5.1.2) as a library: each task (Intent, OOS, Response, SR, Suite, Select, Acts, FinetuneIntent,
// FinetuneResponse, Probe, TSNE, Report) reads its data, loads the model that Common.Model names (package
// modelref resolves --model), runs package evaluate's measures and writes the result as JSON and Markdown.
// Checkpoint selection on validation (Select, MGT §4.2) and ensembles (Response with several members, MGT
// Eq. 7) live here too. cmd/internal/evaluatecmd parses the command line and calls these functions.
package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/modelcard"
	"convrep/modelref"
	"convrep/models"
	"convrep/rundir"
)

// Tasks are the similarity-based evaluations of DSE's tables, in the order they run.
var Tasks = []string{"intent:clinc150", "intent:snips", "oos:clinc150", "response:amazonqa", "response:ubuntu", "response:multiwoz"}

// Suite runs evaluate suite with c and the task's own settings (cmd/internal/evaluatecmd parses them).
func Suite(ctx context.Context, c *Common, shots string, size int, outDir string, protocol string, only string, log *zap.Logger) error {
	if outDir == "" {
		return fmt.Errorf("--output-dir is required")
	}
	if c.Data.Train != "" || c.Data.Test != "" || c.Data.Dataset != "" || c.Output != "" {
		return fmt.Errorf("suite reads the named datasets and writes to --output-dir; use a single task for --dataset/--train/--test/--output")
	}
	p, err := prepare(c, true, shots)
	if err != nil {
		return err
	}
	tasks := strings.Split(only, ",")
	runs := make([]func(*evaluate.Session) (*evaluate.Result, error), len(tasks))
	lengths := make([]int, len(tasks)) // each task's --max-length
	// Every dataset is read and checked before the model loads, so that a bad file fails at once.
	for i, t := range tasks {
		kind, name, _ := strings.Cut(strings.TrimSpace(t), ":")
		if !slices.Contains(Tasks, kind+":"+name) {
			return fmt.Errorf("--tasks: unknown task %q (known: %s)", t, strings.Join(Tasks, ", "))
		}
		d := c.Data
		d.Dataset = name
		lengths[i] = taskLength(kind, c.Model.MaxLength)
		switch kind {
		case "intent":
			ds, source, train, test, _, err := d.intentData()
			if err != nil {
				return err
			}
			if err := checkShots(log, source, train, p.shots); err != nil {
				return err
			}
			task := evaluate.IntentTask{Dataset: ds, Source: source, Train: train, Test: test, Shots: p.shots, Seeds: p.seeds, Splits: c.splitIO()}
			runs[i] = func(s *evaluate.Session) (*evaluate.Result, error) { return s.Intent(ctx, task) }
		case "oos":
			task, err := d.oosTask(protocol)
			if err != nil {
				return err
			}
			task.Shots, task.Seeds, task.Splits = p.shots, p.seeds, c.splitIO()
			if err := checkShots(log, task.Source, task.SupportRows(), p.shots); err != nil {
				return err
			}
			runs[i] = func(s *evaluate.Session) (*evaluate.Result, error) { return s.OOS(ctx, task) }
		case "response":
			set, err := d.responseData()
			if err != nil {
				return err
			}
			task := evaluate.ResponseTask{Set: set, Size: size, Seeds: p.seeds, Splits: c.splitIO()}
			runs[i] = func(s *evaluate.Session) (*evaluate.Result, error) { return s.Response(ctx, task) }
		}
	}
	start := time.Now()
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	all := &evaluate.Result{Model: s.Model, Task: "suite"}
	atLength := map[int]*evaluate.Session{} // one session (and cache of embeddings) per input length
	for i, run := range runs {
		log.Info("running", zap.String("task", tasks[i]), zap.String("model", s.Model), zap.Int("max_length", lengths[i]))
		if atLength[lengths[i]] == nil {
			atLength[lengths[i]] = WithMaxLength(s, lengths[i])
		}
		res, err := run(atLength[lengths[i]])
		if err != nil {
			return fmt.Errorf("%s: %w", tasks[i], err)
		}
		if err := writeResult(res, filepath.Join(outDir, strings.ReplaceAll(tasks[i], ":", "-")+".json")); err != nil {
			return err
		}
		all.Rows = append(all.Rows, res.Rows...)
		for _, n := range res.Notes {
			if !slices.Contains(all.Notes, n) {
				all.Notes = append(all.Notes, n)
			}
		}
		log.Info("done", zap.String("task", tasks[i]), zap.Float64("seconds", res.WallSeconds))
	}
	all.WallSeconds = time.Since(start).Seconds()
	all.Notes = append(all.Notes, fmt.Sprintf("Wall time of the suite, model loading included: %.1f s.", all.WallSeconds))
	if err := writeResult(all, filepath.Join(outDir, "suite.json")); err != nil {
		return err
	}
	events, err := writeSuiteEvents(outDir, modelref.Step(c.Model.Ref, c.Model.Checkpoint), all.Rows)
	if err != nil {
		return fmt.Errorf("tensorboard: %w", err)
	}
	log.Info("the rows as TensorBoard scalars", zap.String("path", events))
	fmt.Fprintf(os.Stderr, "results in %s (suite.md: every table; %.1f s)\n", outDir, all.WallSeconds)
	return recordInCard(c.Model.Ref, all, log)
}

// recordInCard puts the suite's tables into the model card of a convrep model folder (or run folder).
func recordInCard(ref string, r *evaluate.Result, log *zap.Logger) error {
	var b strings.Builder
	if err := r.Markdown(&b); err != nil {
		return err
	}
	for _, dir := range []string{rundir.At(ref).ModelDir(), ref} {
		ok, err := modelcard.SetResults(dir, b.String())
		if err != nil {
			return fmt.Errorf("model card: %w", err)
		}
		if ok {
			log.Info("results recorded in the model card", zap.String("card", filepath.Join(dir, "README.md")))
			return nil
		}
	}
	return nil
}

// PerTaskLength, the suite's default --max-length, gives each task the input length of DSE App. B.1.
const PerTaskLength = -1

// taskLength is the input length of a suite task: --max-length when given, else DSE App. B.1's for the
// task (64 tokens for intent classification and out-of-scope detection, 128 for response Selection), the
// defaults of the single tasks too.
func taskLength(kind string, flag int) int {
	switch {
	case flag != PerTaskLength:
		return flag
	case kind == "response":
		return 128
	default:
		return 64
	}
}

// WithMaxLength is s with its encoders cutting inputs at n tokens (0: where s cuts them, the folder's
// declared max_seq_length or the model's limit), and a cache of its own.
func WithMaxLength(s *evaluate.Session, n int) *evaluate.Session {
	f := s.Fresh()
	resize := func(e evaluate.Encoder) evaluate.Encoder {
		if m, ok := e.(*models.Embedder); ok {
			c := *m
			if n > 0 {
				c.MaxLength = n
			}
			return &c
		}
		return e
	}
	f.Enc, f.Context, f.ResponseEnc = resize(s.Enc), resize(s.Context), resize(s.ResponseEnc)
	return f
}
