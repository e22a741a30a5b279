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

func init() {
	Register(Task{Name: "suite", Section: Similarity,
		Summary:  "every similarity-based task of the papers' tables, one JSON and Markdown file each",
		Synopsis: "--model M --output-dir DIR [flags]",
		About: "Runs every similarity-based task of the papers' tables with one model, sharing its embeddings: " + strings.Join(Tasks, ", ") + ".\n" +
			"Writes DIR/TASK-DATASET.json and .md per task, and DIR/suite.json and DIR/suite.md with every row and the wall time;\n" +
			"and each row's mean as a TensorBoard scalar eval/TASK/DATASET/VARIANT/METRIC at the model's training step\n" +
			"(its checkpoint's, or its model card's; 0 when unknown) in DIR's event file, beside the other steps' there.",
		Data: "the datasets of --tasks under --data-root (as evaluate intent, oos and response read them)",
		New:  func() Options { return new(SuiteOptions) }})
}

// SuiteOptions are evaluate suite's settings.
type SuiteOptions struct {
	Common
	Shots       []int    // support rows per label, for intent and oos
	Candidates  int      // candidates per response-selection query
	OutputDir   string   // where the results go
	OOSProtocol string   // evaluate.OOSAuthors or evaluate.OOSPaper
	Tasks       []string // the tasks to run, TASK:DATASET, from Tasks
}

// Flags declares evaluate suite's flags.
func (o *SuiteOptions) Flags(f *Flags) {
	o.flags(f, PerTaskLength)
	o.headFlag(f)
	shotsFlag(f, &o.Shots, "1,5", "shots per label for intent and oos", false)
	f.IntVar(&o.Candidates, "candidates", 100, "candidates per response-selection query")
	f.StringVar(&o.OutputDir, "output-dir", "", "folder for the results (required)")
	f.StringVar(&o.OOSProtocol, "oos-protocol", evaluate.OOSAuthors, "out-of-scope protocol: authors (the DSE authors' code) or paper (the paper's text); see evaluate oos --help")
	f.Parsed("tasks", strings.Join(Tasks, ","), "the tasks to run, a list of TASK:DATASET", func(s string) error { o.Tasks = strings.Split(s, ","); return nil })
	f.Uint64Var(&o.Data.SplitSeed, "split-seed", 1, "seed choosing each Ubuntu IRC conversation's split point")
}

// Run runs the similarity-based tasks with one model and writes each result, the suite's, and the TensorBoard
// scalars into OutputDir.
func (o *SuiteOptions) Run(ctx context.Context, log *zap.Logger) error {
	c, size, outDir, protocol, tasks := &o.Common, o.Candidates, o.OutputDir, o.OOSProtocol, o.Tasks
	if outDir == "" {
		return fmt.Errorf("--output-dir is required")
	}
	if c.Data.Train != "" || c.Data.Test != "" || c.Data.Dataset != "" || c.Output != "" {
		return fmt.Errorf("suite reads the named datasets and writes to --output-dir; use a single task for --dataset/--train/--test/--output")
	}
	p, err := prepare(c)
	if err != nil {
		return err
	}
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
			if err := checkShots(log, source, train, o.Shots); err != nil {
				return err
			}
			task := evaluate.IntentTask{Dataset: ds, Source: source, Train: train, Test: test, Shots: o.Shots, Seeds: p.seeds, Splits: c.splitIO()}
			runs[i] = func(s *evaluate.Session) (*evaluate.Result, error) { return s.Intent(ctx, task) }
		case "oos":
			task, err := d.oosTask(protocol)
			if err != nil {
				return err
			}
			task.Shots, task.Seeds, task.Splits = o.Shots, p.seeds, c.splitIO()
			if err := checkShots(log, task.Source, task.SupportRows(), o.Shots); err != nil {
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
