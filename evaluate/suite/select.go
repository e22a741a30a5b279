package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/internal/atomicfile"
	"convrep/modelref"
	"convrep/rundir"
)

// selectMetrics are the metrics evaluate select ranks by.
var selectMetrics = []string{"top1", "mrr"}

// ScoredCheckpoint is one checkpoint's response Selection on the validation set, alone.
type ScoredCheckpoint struct {
	Checkpoint string  `json:"checkpoint"`
	Step       int64   `json:"step"`
	Top1       float64 `json:"top1"`
	Top3       float64 `json:"top3"`
	Top10      float64 `json:"top10"`
	MRR        float64 `json:"mrr"`
}

// metric is the value of s that --metric names.
func (s ScoredCheckpoint) metric(name string) float64 {
	if name == "mrr" {
		return s.MRR
	}
	return s.Top1
}

// Selection is what evaluate select writes: every checkpoint's validation scores, best first, and the top ones.
type Selection struct {
	Model       string             `json:"model"`
	Dataset     string             `json:"dataset"`
	Split       string             `json:"split"`
	Source      string             `json:"source"`
	Queries     int                `json:"queries"`
	Candidates  int                `json:"candidates"`
	Seeds       []uint64           `json:"seeds"`
	Metric      string             `json:"metric"`
	Top         int                `json:"top"`
	Ranked      []ScoredCheckpoint `json:"ranked"`      // best first; ties: the earlier step first
	Chosen      []string           `json:"chosen"`      // the first Top of Ranked
	Checkpoints string             `json:"checkpoints"` // Chosen joined by commas, for evaluate response --checkpoint
	WallSeconds float64            `json:"wall_seconds"`
}

func init() {
	Register(Task{Name: "select", Section: Similarity,
		Summary:  "choose checkpoints by response selection on MultiWOZ's validation split (MGT §4.2's checkpoint selection)",
		Synopsis: "--model EXP.toml|RUN --checkpoints RUN|DIR|A,B,... (--dataset multiwoz | --val F) --top N --output chosen.json [flags]",
		About: "Chooses checkpoints on validation data, as MGT §4.2 does: \"the highest performing checkpoint at each granularity is\n" +
			"selected using the validation score. For the ensemble method, the top performing checkpoints are selected from a\n" +
			"single run.\" Each checkpoint alone ranks 1 of --candidates on MultiWOZ 2.1's validation dialogues (as evaluate\n" +
			"response, an MGT checkpoint by cᵀr with both its encoders); checkpoints are ranked by --metric, mean over --seeds,\n" +
			"ties going to the earlier step. Writes the ranked list and the --top best as JSON, and the chosen paths as one\n" +
			"comma-separated line (for evaluate response --checkpoint) beside it (.txt) and on stdout. Never reads a test split.",
		Data: "MultiWOZ 2.1's validation dialogues (multiwoz21/) under --data-root, or a --val file; never a test split",
		New:  func() Options { return new(SelectOptions) }})
}

// SelectOptions are evaluate select's settings.
type SelectOptions struct {
	Common
	Checkpoints []string // a run folder (its checkpoints/), a folder of checkpoints, or the checkpoint files
	Val         string   // a file of validation queries and responses, instead of Data.Dataset
	Split       string   // the dataset's split to choose on: only "val" is accepted
	Candidates  int      // candidates per query, the true response included
	Top         int      // how many checkpoints to choose
	Metric      string   // what ranks them: top1 or mrr
}

// Flags declares evaluate select's flags.
func (o *SelectOptions) Flags(f *Flags) {
	o.flags(f, 128) // DSE App. B.1: 128 for response selection
	f.Parsed("checkpoints", "", "the checkpoints to choose from: a run folder (its checkpoints/), a folder of step-N.safetensors files, or a comma-separated list of them (required)",
		func(s string) error { o.Checkpoints = splitList(s); return nil })
	f.StringVar(&o.Val, "val", "", "a CSV or JSON lines file of validation queries and responses, instead of --dataset")
	f.StringVar(&o.Split, "split", "val", "the dataset's split to choose on: only val (choosing on test would report a test score that chose itself)")
	f.IntVar(&o.Candidates, "candidates", 100, "candidates per query, the true response included")
	f.IntVar(&o.Top, "top", 1, "how many checkpoints to choose (MGT: 1 per granularity; 5 for the Ensemble (5) baseline)")
	f.StringVar(&o.Metric, "metric", "top1", "what ranks the checkpoints: top1 or mrr")
}

// Run scores each checkpoint alone on the validation data and writes the ranking and the choice.
func (o *SelectOptions) Run(ctx context.Context, log *zap.Logger) error {
	c, size := &o.Common, o.Candidates
	sel, members, err := checkSelect(c, o.Checkpoints, o.Val, o.Split, o.Metric, o.Top, size)
	if err != nil {
		return err
	}
	start := time.Now()
	set, err := c.Data.responseData()
	if err != nil {
		return err
	}
	if len(set.Responses) < size {
		return fmt.Errorf("%s: %d responses, fewer than --candidates %d", set.Dataset, len(set.Responses), size)
	}
	sel.Dataset, sel.Source, sel.Split, sel.Queries = set.Dataset, set.Source, "val", len(set.Contexts)
	task := evaluate.ResponseTask{Set: set, Size: size, Seeds: sel.Seeds, Splits: c.splitIO()}
	score := func(ctx context.Context, m Model) (*evaluate.Result, error) {
		s, err := Open(ctx, m, log)
		if err != nil {
			return nil, err
		}
		if !c.Quiet {
			s.Progress = os.Stderr
		}
		return s.Response(ctx, task)
	}
	if sel.Ranked, err = scoreCheckpoints(ctx, members, score, log); err != nil {
		return err
	}
	if err := sel.Choose(); err != nil {
		return err
	}
	sel.WallSeconds = time.Since(start).Seconds()
	if err := sel.write(c.Output); err != nil {
		return err
	}
	fmt.Println(sel.Checkpoints)
	return nil
}

// checkSelect checks evaluate select's flags before any data are read or model loaded, and returns the
// Selection to fill and one member (model and checkpoint) per checkpoint.
func checkSelect(c *Common, ckpts []string, val, split, metric string, top, size int) (*Selection, []Model, error) {
	switch {
	case split != "val":
		return nil, nil, fmt.Errorf("--split %q: evaluate select chooses on validation data only (val); a checkpoint chosen on the test split would be scored on the data that chose it", split)
	case c.Data.Test != "" || c.Data.Train != "":
		return nil, nil, fmt.Errorf("evaluate select reads validation data: --dataset multiwoz (its val split) or --val FILE, not --test/--train")
	case c.Model.Checkpoint != "":
		return nil, nil, fmt.Errorf("evaluate select takes --checkpoints (the candidates to choose from), not --checkpoint")
	case !slices.Contains(selectMetrics, metric):
		return nil, nil, fmt.Errorf("--metric %q: want one of %s", metric, strings.Join(selectMetrics, ", "))
	case c.Output == "":
		return nil, nil, fmt.Errorf("--output is required (the selection's JSON; the chosen paths go beside it as .txt)")
	case filepath.Ext(c.Output) != ".json":
		return nil, nil, fmt.Errorf("--output %s: want a .json file (the chosen paths go beside it as .txt)", c.Output)
	case size < 2:
		return nil, nil, fmt.Errorf("--candidates %d: want at least 2", size)
	case val == "" && c.Data.Dataset != "multiwoz":
		return nil, nil, fmt.Errorf("--dataset %q: evaluate select needs a validation split, which only --dataset multiwoz has here (or give --val FILE)", c.Data.Dataset)
	}
	if strings.Contains(c.Model.Ref, ",") {
		return nil, nil, fmt.Errorf("--model %q: evaluate select scores the checkpoints of one model", c.Model.Ref)
	}
	c.Data.Test, c.Data.Split = val, "val"
	paths, err := checkpointList(ckpts)
	if err != nil {
		return nil, nil, err
	}
	if top < 1 || top > len(paths) {
		return nil, nil, fmt.Errorf("--top %d: want 1 to %d (the number of checkpoints in --checkpoints %s)", top, len(paths), strings.Join(ckpts, ","))
	}
	seeds := c.Seeds
	members := make([]Model, len(paths))
	for i, p := range paths {
		members[i] = c.Model
		members[i].Checkpoint, members[i].Dual = p, true // an MGT checkpoint scores by cᵀr (Eq. 4), as evaluate response
		if err := modelref.Check(members[i].Ref, p); err != nil {
			return nil, nil, err
		}
	}
	return &Selection{Model: strings.TrimSuffix(c.Model.Ref, "/"), Candidates: size, Seeds: seeds, Metric: metric, Top: top}, members, nil
}

// CheckpointStep reads the step from a checkpoint's file name, as the trainer names it (rundir.StepOf).
func CheckpointStep(path string) (int64, error) {
	step, ok := rundir.StepOf(path)
	if !ok {
		return 0, fmt.Errorf("--checkpoints: %s is not named step-N.safetensors, as the trainer names checkpoints", path)
	}
	return step, nil
}

// checkpointList expands --checkpoints: a run folder (its checkpoints/ folder), a folder of checkpoints, or a
// list of files; every entry must exist, be named step-N.safetensors and appear once.
func checkpointList(entries []string) ([]string, error) {
	arg := strings.Join(entries, ",")
	if len(entries) == 0 {
		return nil, fmt.Errorf("--checkpoints is required: a run folder, a folder of step-N.safetensors files, or a comma-separated list of them")
	}
	var paths []string
	if len(entries) == 1 {
		if st, err := os.Stat(entries[0]); err == nil && st.IsDir() {
			dir := entries[0]
			if st, err := os.Stat(rundir.At(dir).CheckpointDir()); err == nil && st.IsDir() {
				dir = rundir.At(dir).CheckpointDir() // a run folder
			}
			found, err := rundir.CheckpointsIn(dir) // oldest first
			if err != nil {
				return nil, fmt.Errorf("--checkpoints %s: %w", arg, err)
			}
			if len(found) == 0 {
				return nil, fmt.Errorf("--checkpoints %s: no checkpoints (step-N.safetensors) in %s", arg, dir)
			}
			entries = found
		}
	}
	seen := map[string]bool{}
	for _, p := range entries {
		if p == "" {
			return nil, fmt.Errorf("--checkpoints %q: an empty entry", arg)
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--checkpoints: %w", err)
		}
		if st.IsDir() {
			return nil, fmt.Errorf("--checkpoints: %s is a folder; a list names checkpoint files", p)
		}
		if _, err := CheckpointStep(p); err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("--checkpoints: %w", err)
		}
		if seen[abs] {
			return nil, fmt.Errorf("--checkpoints: %s is listed twice", p)
		}
		seen[abs] = true
		paths = append(paths, p)
	}
	return paths, nil
}

// scoreFunc evaluates one member (a model at one checkpoint) on the validation set.
type scoreFunc func(ctx context.Context, m Model) (*evaluate.Result, error)

// scoreCheckpoints scores each member alone, in turn (one model held at a time).
func scoreCheckpoints(ctx context.Context, members []Model, score scoreFunc, log *zap.Logger) ([]ScoredCheckpoint, error) {
	out := make([]ScoredCheckpoint, len(members))
	for i, m := range members {
		step, err := CheckpointStep(m.Checkpoint)
		if err != nil {
			return nil, err
		}
		log.Info("scoring checkpoint", zap.Int("checkpoint", i+1), zap.Int("of", len(members)), zap.String("path", m.Checkpoint))
		res, err := score(ctx, m)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", m.Checkpoint, err)
		}
		out[i] = ScoredCheckpoint{Checkpoint: m.Checkpoint, Step: step}
		for metric, dst := range map[string]*float64{"top1": &out[i].Top1, "top3": &out[i].Top3, "top10": &out[i].Top10, "mrr": &out[i].MRR} {
			found := false
			for _, r := range res.Rows {
				if r.Metric == metric {
					*dst, found = r.Mean, true
				}
			}
			if !found {
				return nil, fmt.Errorf("checkpoint %s: response Selection gave no %s row", m.Checkpoint, metric)
			}
		}
	}
	return out, nil
}

// Choose orders Ranked best first by Metric (ties: the earlier step first, then the path, so that the order
// never depends on the input's) and takes the first Top.
func (s *Selection) Choose() error {
	if s.Top < 1 || s.Top > len(s.Ranked) {
		return fmt.Errorf("--top %d: want 1 to %d (the number of checkpoints scored)", s.Top, len(s.Ranked))
	}
	sort.SliceStable(s.Ranked, func(i, j int) bool {
		a, b := s.Ranked[i], s.Ranked[j]
		if x, y := a.metric(s.Metric), b.metric(s.Metric); x != y {
			return x > y
		}
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		return a.Checkpoint < b.Checkpoint
	})
	s.Chosen = nil
	for _, r := range s.Ranked[:s.Top] {
		s.Chosen = append(s.Chosen, r.Checkpoint)
	}
	s.Checkpoints = strings.Join(s.Chosen, ",")
	return nil
}

// write writes the Selection as JSON to path and the chosen paths, one comma-separated line, beside it (.txt).
func (s *Selection) write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n')); err != nil {
		return err
	}
	return atomicfile.WriteFile(ChosenPath(path), []byte(s.Checkpoints+"\n"))
}

// ChosenPath is where the chosen paths go beside a selection's JSON.
func ChosenPath(jsonPath string) string {
	return strings.TrimSuffix(jsonPath, filepath.Ext(jsonPath)) + ".txt"
}
