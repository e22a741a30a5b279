package trainer_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"convrep/objectives/dse"
	"convrep/trainer/trainertest"

	"github.com/sugarme/gotch/ts"

	"convrep/models"
	"convrep/objectives"
	"convrep/rundir"
)

// probeObjective is DSE that goes wrong on purpose at one step: its loss turns NaN or infinite, or stays
// finite while its gradient turns NaN. At that moment it hashes the run's checkpoints, so the test can tell
// whether the failed step touched them.
type probeObjective struct {
	objectives.Objective
	at    int64  // the call (= optimiser step, without accumulation) that goes wrong
	kind  string // nan, inf or nangrad
	watch string // the run's output_dir
	calls int64
}

const probeName = "probe"

// probeSeen holds, per output_dir, the checkpoints' hashes when the probe went wrong.
var probeSeen sync.Map

func init() {
	// A refused registration would make every objectives.Parse fail, which the tests would report.
	_ = objectives.Register(probeName, objectives.Paper{}, parseProbe)
}

// probeConfig is the probe's settings around DSE's.
type probeConfig struct {
	objectives.Config
	at          int64
	kind, watch string
}

func parseProbe(s objectives.Settings) (objectives.Config, error) {
	p := probeConfig{}
	rest := map[string]any{"name": dse.Name}
	for k, v := range s {
		switch k {
		case "probe_at":
			p.at, _ = v.(int64)
		case "probe_kind":
			p.kind, _ = v.(string)
		case "probe_watch":
			p.watch, _ = v.(string)
		default:
			rest[k] = v
		}
	}
	if p.at < 1 || p.watch == "" || (p.kind != "nan" && p.kind != "inf" && p.kind != "nangrad") {
		return nil, fmt.Errorf("probe settings %v", s)
	}
	var err error
	p.Config, err = objectives.Parse(rest)
	return p, err
}

func (c probeConfig) Build(m *models.Model) (objectives.Objective, error) {
	o, err := c.Config.Build(m)
	return &probeObjective{Objective: o, at: c.at, kind: c.kind, watch: c.watch}, err
}

func (p *probeObjective) Loss(batch any, train bool) (*ts.Tensor, map[string]*ts.Tensor, error) {
	loss, metrics, err := p.Objective.Loss(batch, train)
	if err != nil || !train {
		return loss, metrics, err
	}
	if p.calls++; p.calls != p.at {
		return loss, metrics, nil
	}
	hashes, err := trainertest.HashDir(rundir.At(p.watch).CheckpointDir())
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, err
	}
	probeSeen.Store(p.watch, hashes)
	switch p.kind {
	case "nan":
		return loss.MustMulScalar(ts.FloatScalar(math.NaN()), true), metrics, nil
	case "inf":
		return loss.MustMulScalar(ts.FloatScalar(math.Inf(1)), true), metrics, nil
	}
	// loss + 0·√(loss − loss): the value is the loss, but d√u/du = ∞ at u = 0, so 0·∞ = NaN flows back
	// into every weight the loss depends on.
	root := loss.MustSub(loss, false).MustSqrt(true).MustMulScalar(ts.FloatScalar(0), true)
	return loss.MustAdd(root, true), metrics, nil
}

// TestNaNStopsTheRun makes step k go wrong and wants Run to fail naming step k, having written nothing
// after step k-1: the newest checkpoint is the last good one, byte for byte what it was before step k.
func TestNaNStopsTheRun(t *testing.T) {
	const k = 6
	for _, tc := range []struct {
		kind, want string
		every      int64
	}{
		{"nan", "loss is NaN", 2},
		{"inf", "loss is +Inf", 2},
		// A finite loss with a NaN gradient would make step k's weights NaN; checkpointing every step
		// would then save them as the "last good" checkpoint.
		{"nangrad", "NaN", 1},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			dir := t.TempDir()
			exp := trainertest.Experiment(t, dir, "")
			out := filepath.Join(dir, "out")
			err := trainertest.Run(t, exp, []string{"objective.name=" + probeName, fmt.Sprintf("objective.probe_at=%d", k),
				fmt.Sprintf("objective.probe_kind=%q", tc.kind), fmt.Sprintf("objective.probe_watch=%q", out),
				fmt.Sprintf("train.checkpoint_every=%d", tc.every), "train.max_steps=10"}, false)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("step %d:", k)) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v; want an error naming step %d and %q", err, k, tc.want)
			}
			seen, ok := probeSeen.Load(out)
			if !ok {
				t.Fatal("the probe never went wrong")
			}
			before := seen.(map[string][32]byte)
			after := trainertest.HashFiles(t, rundir.At(out).CheckpointDir())
			if !trainertest.SameHashes(before, after) {
				t.Errorf("checkpoints changed after step %d went wrong: before %d files %v, after %d files %v",
					k, len(before), keys(before), len(after), keys(after))
			}
			steps := trainertest.CheckpointSteps(t, out)
			lastGood := (k - 1) / tc.every * tc.every
			if len(steps) == 0 || steps[len(steps)-1] != lastGood {
				t.Fatalf("checkpoints at steps %v, want the newest at %d", steps, lastGood)
			}
			for _, s := range steps {
				if bad := trainertest.NonFiniteParams(t, rundir.At(out).CheckpointPath(s)); len(bad) > 0 {
					t.Errorf("checkpoint %d holds non-finite parameters: %v", s, bad)
				}
			}
			var want []int64
			for s := int64(1); s < k; s++ {
				want = append(want, s)
			}
			if got := metricSteps(t, out); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("metrics.jsonl steps %v, want %v", got, want)
			}
			if _, err := os.Stat(filepath.Join(out, "model")); err == nil {
				t.Error("a failed run saved a model")
			}
		})
	}
}

// TestDivergingRunStops trains real DSE with a learning rate that blows the weights up: some step's loss
// overflows, and the checkpoints left are those of finite weights before it.
func TestDivergingRunStops(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
	}{
		{"huge learning rate", []string{"train.lr=1e30", "train.head_lr=1e30"}},
		{"tiny temperature", []string{"objective.temperature=1e-45"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exp := trainertest.Experiment(t, dir, "")
			out := filepath.Join(dir, "out")
			err := trainertest.Run(t, exp, append(tc.set, "train.checkpoint_every=1", "train.max_steps=6"), false)
			var k int64
			if err == nil {
				t.Fatal("Run succeeded; want the loss to blow up")
			}
			if _, serr := fmt.Sscanf(err.Error(), "step %d:", &k); serr != nil || !strings.Contains(err.Error(), "loss is") {
				t.Fatalf("Run: %v; want an error naming the step whose loss is not finite", err)
			}
			steps := trainertest.CheckpointSteps(t, out)
			if k > 1 && (len(steps) == 0 || steps[len(steps)-1] != k-1) {
				t.Fatalf("loss blew up at step %d, checkpoints at %v; want the newest at %d", k, steps, k-1)
			}
			if k == 1 && len(steps) > 0 {
				t.Fatalf("loss blew up at step 1, yet checkpoints at %v", steps)
			}
			for _, s := range steps {
				if bad := trainertest.NonFiniteParams(t, rundir.At(out).CheckpointPath(s)); len(bad) > 0 {
					t.Errorf("checkpoint %d holds non-finite parameters: %v", s, bad)
				}
			}
			t.Logf("%s: %v", tc.name, err)
		})
	}
}

func keys(m map[string][32]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
