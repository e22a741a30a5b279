package trainer_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/rundir"
	"convrep/trainer"
	"convrep/trainer/trainertest"
)

// watchedObjective wraps another registered objective (setting inner, e.g. dse or the NaN probe) and notes
// torch.Reads() each time a training step asks for its loss; at the call cancel_at it cancels the run's
// context, as SIGTERM would; with leak set, each call also makes a tensor it never drops.
type watchedObjective struct {
	objectives.Objective
	key      string
	cancelAt int64
	leak     bool
	calls    int64
}

const watchedName = "watched"

// watched holds, per key, the read counts seen and the run's cancel function.
var watched sync.Map

type watchLog struct {
	reads  []int64 // torch.Reads() as call i+1 began
	cancel context.CancelFunc
	leaked []*ts.Tensor // with leak: the tensor call i+1 made and left
}

func init() {
	_ = objectives.Register(watchedName, objectives.Paper{}, parseWatched)
}

type watchedConfig struct {
	objectives.Config
	key      string
	cancelAt int64
	leak     bool
}

func parseWatched(s objectives.Settings) (objectives.Config, error) {
	c := watchedConfig{}
	rest := map[string]any{}
	for k, v := range s {
		switch k {
		case "name":
		case "inner":
			rest["name"] = v
		case "watch_key":
			c.key, _ = v.(string)
		case "cancel_at":
			c.cancelAt, _ = v.(int64)
		case "leak":
			c.leak, _ = v.(bool)
		default:
			rest[k] = v
		}
	}
	if c.key == "" || rest["name"] == nil {
		return nil, fmt.Errorf("watched settings %v", s)
	}
	var err error
	c.Config, err = objectives.Parse(rest)
	return c, err
}

func (c watchedConfig) Build(m *models.Model) (objectives.Objective, error) {
	o, err := c.Config.Build(m)
	return &watchedObjective{Objective: o, key: c.key, cancelAt: c.cancelAt, leak: c.leak}, err
}

func (w *watchedObjective) Loss(batch any, train bool) (*ts.Tensor, map[string]*ts.Tensor, error) {
	if train {
		w.calls++
		v, _ := watched.LoadOrStore(w.key, &watchLog{})
		l := v.(*watchLog)
		l.reads = append(l.reads, torch.Reads())
		if w.leak {
			l.leaked = append(l.leaked, ts.MustOnes([]int64{256}, gotch.Float, gotch.CPU))
		}
		if w.calls == w.cancelAt && l.cancel != nil {
			l.cancel()
		}
	}
	return w.Objective.Loss(batch, train)
}

// TestNoReadsBetweenLogSteps counts the device-to-host reads of each step (torch.Read, through which the
// trainer reads every value): none at a step that neither logs nor checkpoints, two at a step that does.
func TestNoReadsBetweenLogSteps(t *testing.T) {
	dir := t.TempDir()
	// 12 steps, logged every 4, checkpointed every 6: reads after steps 4, 6, 8, 12. A log step reads the tally
	// and the objective's metrics (DSE's pos_cos); a checkpoint step the tally and the metrics' window, which
	// the checkpoint keeps.
	checkReadsPerStep(t, dir, func(step int) int64 {
		if step%4 == 0 || step%6 == 0 {
			return 2
		}
		return 0
	}, "train.max_steps=12", "train.log_every=4", "train.checkpoint_every=6")
	ms := readMetricLines(t, filepath.Join(dir, "out"))
	if got := fmt.Sprint(metricStepsOf(ms)); got != "[4 8 12]" {
		t.Fatalf("metrics at steps %s, want [4 8 12]", got)
	}
	for _, m := range ms {
		if math.IsNaN(m.Loss) || m.Loss <= 0 || m.GradNorm <= 0 {
			t.Errorf("step %d: loss %v, gradient norm %v", m.Step, m.Loss, m.GradNorm)
		}
		// The batch of every step after the first was built while the step before it ran.
		if m.DataWaitS < 0 || m.DataWaitS > m.StepS {
			t.Errorf("step %d: data_wait_s %v outside [0, step_s %v]", m.Step, m.DataWaitS, m.StepS)
		}
		t.Logf("step %d: step_s %.4f, data_wait_s %.6f", m.Step, m.StepS, m.DataWaitS)
	}
}

func metricStepsOf(ms []trainer.Metric) []int64 {
	var s []int64
	for _, m := range ms {
		s = append(s, m.Step)
	}
	return s
}

// TestNonFiniteBetweenReadings makes step 6 go wrong where no step reads the device after it, and wants the
// run to stop at the next reading (a log or checkpoint step, or the checkpoint of a stop by signal) with an
// error naming the steps since the last reading, having written no checkpoint after the last good one and
// none with non-finite weights.
func TestNonFiniteBetweenReadings(t *testing.T) {
	const k = 6
	for _, tc := range []struct {
		name, kind string
		set        []string
		cancel     bool
		want       string
		newest     int64
		logged     string
	}{
		// Readings after steps 4 and 8: step 8's names steps 5 to 8.
		{"loss at a log step", "nan", []string{"train.log_every=4", "train.checkpoint_every=4"}, false,
			"steps 5 to 8: a loss is not finite (their sum is NaN)", 4, "[4]"},
		// Readings after steps 3, 4 and 6: step 6's names steps 5 and 6, and its checkpoint is not written.
		{"gradient at a checkpoint step", "nangrad", []string{"train.log_every=4", "train.checkpoint_every=3"}, false,
			"steps 5 to 6: a gradient norm is not finite (their sum is NaN)", 3, "[4]"},
		// SIGTERM during step 6: the stop's checkpoint reads steps 5 and 6 first and is not written.
		{"loss before a stop", "inf", []string{"train.log_every=4", "train.checkpoint_every=4"}, true,
			"steps 5 to 6: a loss is not finite (their sum is +Inf)", 4, "[4]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exp := trainertest.Experiment(t, dir, "")
			out := filepath.Join(dir, "out")
			key := t.Name()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cancelAt := int64(0)
			if tc.cancel {
				cancelAt = k
				watched.Store(key, &watchLog{cancel: cancel})
			}
			tr, err := trainertest.New(t, exp, append([]string{"objective.name=" + watchedName, `objective.inner="` + probeName + `"`,
				fmt.Sprintf("objective.watch_key=%q", key), fmt.Sprintf("objective.cancel_at=%d", cancelAt),
				fmt.Sprintf("objective.probe_at=%d", k), fmt.Sprintf("objective.probe_kind=%q", tc.kind),
				fmt.Sprintf("objective.probe_watch=%q", out), "train.max_steps=12"}, tc.set...), false)
			if err != nil {
				t.Fatal(err)
			}
			err = tr.Run(ctx, trainer.Options{})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Run: %v; want an error beginning %q", err, tc.want)
			}
			steps := trainertest.CheckpointSteps(t, out)
			if len(steps) == 0 || steps[len(steps)-1] != tc.newest {
				t.Fatalf("checkpoints at steps %v, want the newest at %d", steps, tc.newest)
			}
			for _, s := range steps {
				if bad := trainertest.NonFiniteParams(t, rundir.At(out).CheckpointPath(s)); len(bad) > 0 {
					t.Errorf("checkpoint %d holds non-finite parameters: %v", s, bad)
				}
			}
			if got := fmt.Sprint(metricSteps(t, out)); got != tc.logged {
				t.Errorf("metrics.jsonl steps %s, want %s", got, tc.logged)
			}
		})
	}
}

// A tensor a step makes and never drops is freed when the step ends (its torch.Scope), not left to Go's
// collector, while what outlives the step (the tally's gradient norm, the objective metrics' sums, Adam's
// moments) stays usable: the run trains on and logs finite losses.
func TestStepScopeFreesWhatAStepLeaves(t *testing.T) {
	dir := t.TempDir()
	exp := trainertest.Experiment(t, dir, "")
	key := t.Name()
	err := trainertest.Run(t, exp, []string{"objective.name=" + watchedName, `objective.inner="dse"`, fmt.Sprintf("objective.watch_key=%q", key),
		"objective.leak=true", "train.max_steps=8", "train.log_every=4", "train.checkpoint_every=4"}, false)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := watched.Load(key)
	leaked := v.(*watchLog).leaked
	if len(leaked) != 8 {
		t.Fatalf("%d leaked tensors, want one per step (8)", len(leaked))
	}
	for i, x := range leaked {
		if x.Ctensor() != nil {
			t.Errorf("the tensor step %d left is still alive after the step", i+1)
		}
	}
	for _, m := range readMetricLines(t, filepath.Join(dir, "out")) {
		if math.IsNaN(m.Loss) || m.Loss <= 0 || m.GradNorm <= 0 || len(m.Objective) == 0 {
			t.Errorf("step %d: loss %v, gradient norm %v, metrics %v", m.Step, m.Loss, m.GradNorm, m.Objective)
		}
	}
}

// checkReadsPerStep trains the tiny DSE experiment in dir, wrapped by the watched objective, with the sets
// given (12 steps), and wants step k to make want(k) device-to-host reads: those between its loss and the next.
func checkReadsPerStep(t *testing.T, dir string, want func(step int) int64, sets ...string) {
	t.Helper()
	exp := trainertest.Experiment(t, dir, "")
	key := t.Name()
	err := trainertest.Run(t, exp, append([]string{"objective.name=" + watchedName, `objective.inner="dse"`, fmt.Sprintf("objective.watch_key=%q", key)},
		sets...), false)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := watched.Load(key)
	if !ok {
		t.Fatal("the objective was never asked for a loss")
	}
	reads := v.(*watchLog).reads
	if len(reads) != 12 {
		t.Fatalf("%d training losses, want 12", len(reads))
	}
	// Step k runs from the k-th loss to the (k+1)-th: a read after step k falls between them.
	for k := 1; k < len(reads); k++ {
		if got := reads[k] - reads[k-1]; got != want(k) {
			t.Errorf("step %d made %d device-to-host reads, want %d", k, got, want(k))
		}
	}
}
