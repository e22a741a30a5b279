package evaluatecmd

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

// suiteTasks are the similarity-based evaluations of DSE's tables, in the order they run.
var suiteTasks = []string{"intent:clinc150", "intent:snips", "oos:clinc150", "response:amazonqa", "response:ubuntu", "response:multiwoz"}

func runSuite(ctx context.Context, args []string, log *zap.Logger) error {
	var c common
	fs := newFlags("suite", "--model M --output-dir DIR [flags]",
		"Runs every similarity-based task of the papers' tables with one model, sharing its embeddings: "+strings.Join(suiteTasks, ", ")+".\n"+
			"Writes DIR/TASK-DATASET.json and .md per task, and DIR/suite.json and DIR/suite.md with every row and the wall time;\n"+
			"and each row's mean as a TensorBoard scalar eval/TASK/DATASET/VARIANT/METRIC at the model's training step\n"+
			"(its checkpoint's, or its model card's; 0 when unknown) in DIR's event file, beside the other steps' there.")
	c.register(fs, perTaskLength)
	c.registerHead(fs)
	shots := fs.String("shots", "1,5", "shots per label for intent and oos")
	size := fs.Int("candidates", 100, "candidates per response-selection query")
	outDir := fs.String("output-dir", "", "folder for the results (required)")
	protocol := fs.String("oos-protocol", evaluate.OOSAuthors, "out-of-scope protocol: authors (the DSE authors' code) or paper (the paper's text); see evaluate oos --help")
	only := fs.String("tasks", strings.Join(suiteTasks, ","), "the tasks to run, a list of TASK:DATASET")
	fs.Uint64Var(&c.data.splitSeed, "split-seed", 1, "seed choosing each Ubuntu IRC conversation's split point")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	if *outDir == "" {
		return fmt.Errorf("--output-dir is required")
	}
	if c.data.train != "" || c.data.test != "" || c.data.dataset != "" || c.output != "" {
		return fmt.Errorf("suite reads the named datasets and writes to --output-dir; use a single task for --dataset/--train/--test/--output")
	}
	p, err := prepare(&c, true, *shots)
	if err != nil {
		return err
	}
	tasks := strings.Split(*only, ",")
	runs := make([]func(*evaluate.Session) (*evaluate.Result, error), len(tasks))
	lengths := make([]int, len(tasks)) // each task's --max-length
	// Every dataset is read and checked before the model loads, so that a bad file fails at once.
	for i, t := range tasks {
		kind, name, _ := strings.Cut(strings.TrimSpace(t), ":")
		if !slices.Contains(suiteTasks, kind+":"+name) {
			return fmt.Errorf("--tasks: unknown task %q (known: %s)", t, strings.Join(suiteTasks, ", "))
		}
		d := c.data
		d.dataset = name
		lengths[i] = taskLength(kind, c.model.maxLength)
		switch kind {
		case "intent":
			ds, source, train, test, _, err := d.intentData()
			if err != nil {
				return err
			}
			task := evaluate.IntentTask{Dataset: ds, Source: source, Train: train, Test: test, Shots: p.shots, Seeds: p.seeds, Splits: c.splitIO()}
			runs[i] = func(s *evaluate.Session) (*evaluate.Result, error) { return s.Intent(ctx, task) }
		case "oos":
			task, err := d.oosTask(*protocol)
			if err != nil {
				return err
			}
			task.Shots, task.Seeds, task.Splits = p.shots, p.seeds, c.splitIO()
			runs[i] = func(s *evaluate.Session) (*evaluate.Result, error) { return s.OOS(ctx, task) }
		case "response":
			set, err := d.responseData()
			if err != nil {
				return err
			}
			task := evaluate.ResponseTask{Set: set, Size: *size, Seeds: p.seeds, Splits: c.splitIO()}
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
			atLength[lengths[i]] = withMaxLength(s, lengths[i])
		}
		res, err := run(atLength[lengths[i]])
		if err != nil {
			return fmt.Errorf("%s: %w", tasks[i], err)
		}
		if err := writeResult(res, filepath.Join(*outDir, strings.ReplaceAll(tasks[i], ":", "-")+".json")); err != nil {
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
	if err := writeResult(all, filepath.Join(*outDir, "suite.json")); err != nil {
		return err
	}
	events, err := writeSuiteEvents(*outDir, modelref.Step(c.model.ref, c.model.checkpoint), all.Rows)
	if err != nil {
		return fmt.Errorf("tensorboard: %w", err)
	}
	log.Info("the rows as TensorBoard scalars", zap.String("path", events))
	fmt.Fprintf(os.Stderr, "results in %s (suite.md: every table; %.1f s)\n", *outDir, all.WallSeconds)
	return recordInCard(c.model.ref, all, log)
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

// perTaskLength, the suite's default --max-length, gives each task the input length of DSE App. B.1.
const perTaskLength = -1

// taskLength is the input length of a suite task: --max-length when given, else DSE App. B.1's for the
// task (64 tokens for intent classification and out-of-scope detection, 128 for response selection), the
// defaults of the single tasks too.
func taskLength(kind string, flag int) int {
	switch {
	case flag != perTaskLength:
		return flag
	case kind == "response":
		return 128
	default:
		return 64
	}
}

// withMaxLength is s with its encoders cutting inputs at n tokens (0: where s cuts them, the folder's
// declared max_seq_length or the model's limit), and a cache of its own.
func withMaxLength(s *evaluate.Session, n int) *evaluate.Session {
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
