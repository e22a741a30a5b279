package trainer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/experiment"
	"convrep/internal/shared"
	"convrep/models"
)

// The backbone's parameters as counted here are those models.New builds, for the mini BERT and the three
// families at small sizes.
func TestBackboneParamsEqualTheBuiltModel(t *testing.T) {
	mini, err := models.ReadConfig(filepath.Join(shared.MustPath(t, "models", "mini-bert-dialogue-mlm"), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]*models.Config{"mini-bert-dialogue-mlm": mini}
	for _, arch := range []models.Arch{models.BERT, models.RoBERTa, models.DistilBERT} {
		c, err := models.NewConfig(arch, models.Sizes{VocabSize: 100, HiddenSize: 16, NumLayers: 2, NumHeads: 2,
			IntermediateSize: 24, MaxSequence: 20, PadTokenID: 1})
		if err != nil {
			t.Fatal(err)
		}
		cases[string(arch)] = c
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := models.New(c, models.Heads{}, gotch.CPU)
			if err != nil {
				t.Fatal(err)
			}
			defer m.VS.Destroy()
			var built int64
			for _, p := range m.VS.Variables() {
				built += int64(p.Numel())
			}
			if got := backboneParams(c); got != built {
				t.Errorf("counted %d parameters, the model has %d", got, built)
			}
		})
	}
}

// The mini BERT by hand: embeddings 30,524×256 + 128×256 + 2×256 + 512 = 7,847,936; a layer 4×(256² + 256) +
// 2×512 + (256×1,024 + 1,024) + (1,024×256 + 256) = 789,760, four of them 3,159,040: 11,006,976 parameters,
// 44.0 MB of fp32 weights, as many gradients, 88.1 MB of Adam moments, a checkpoint of 132.1 MB. DSE's step at
// batch 64 and 32 tokens is 128 sequences: Eq. 1 of Korthikanti et al. gives 32·128·(34·256 + 5·4·32) =
// 38,273,024 bytes a layer in 16 bits, twice in fp32, four layers 306.2 MB; 482.3 MB in all. The dry run prints
// those (from the experiment file's own paths, read from the repository's root), and writes nothing.
func TestDryRunOfTheMiniBERT(t *testing.T) {
	shared.MustPath(t, "models", "mini-bert-dialogue-mlm")
	out := t.TempDir()
	t.Chdir("..")
	e, err := experiment.Load(filepath.Join("experiments", "dse_mini_cpu.toml"), []string{
		"output_dir=" + `"` + out + `"`, "data.cache_dir=" + `"` + filepath.Join(out, "cache") + `"`})
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	if err := DryRun(context.Background(), e, &w, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"parameters  11006976 (11.0M)",
		"64 examples × 2 sequences × 32 tokens, precision fp32",
		"memory      about 482 MB: weights 44 MB, gradients 44 MB, optimiser 88 MB, activations about 306 MB",
		"corpora     ", "at most 200", "each about 132 MB", "writes nothing",
	} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("the dry run lacks %q:\n%s", want, w.String())
		}
	}
	if f := EstimateFootprint(mustConfig(t), 128, 32, false, false); f.Params != 11006976 || f.Weights != 44027904 ||
		f.Optimizer != 88055808 || f.Activations != 4*2*38273024 {
		t.Errorf("footprint %+v", f)
	}
	if entries, _ := filepath.Glob(filepath.Join(out, "*")); len(entries) > 0 {
		t.Errorf("the dry run wrote %v", entries)
	}
}

func mustConfig(t *testing.T) *models.Config {
	c, err := models.ReadConfig(filepath.Join(shared.MustPath(t, "models", "mini-bert-dialogue-mlm"), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// MemAvailable is read in bytes from a meminfo file; a file without it is an error.
func TestMemAvailable(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]int64{
		"MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   21304212 kB\n": 21304212 * 1024,
		"MemTotal:       24000000 kB\n": -1,
		"MemAvailable:   lots kB\n":     -1,
	} {
		p := filepath.Join(dir, "meminfo")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := memAvailable(p)
		if (want < 0) != (err != nil) || (want >= 0 && got != want) {
			t.Errorf("%q: %d, %v; want %d", body, got, err, want)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{410e9: "410 GB", 21.3e9: "21.3 GB", 483.4e6: "483 MB", 1500: "2 kB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// A rank's estimate holds its share of the global batch; the ranks of a node, which share its host memory, are
// the world, or LOCAL_WORLD_SIZE of a multi-node job.
func TestRanksOfTheJob(t *testing.T) {
	for _, tc := range []struct {
		world, rank, localWorld string
		wantWorld, wantLocal    int
	}{
		{"", "", "", 1, 1},
		{"4", "0", "", 4, 4},
		{"8", "3", "4", 8, 4},
		{"8", "9", "4", 1, 1}, // a bad environment: joinCluster names it
	} {
		t.Setenv("WORLD_SIZE", tc.world)
		t.Setenv("RANK", tc.rank)
		t.Setenv("LOCAL_WORLD_SIZE", tc.localWorld)
		if env, l := ranks(); env.World != tc.wantWorld || l != tc.wantLocal {
			t.Errorf("WORLD_SIZE=%q RANK=%q LOCAL_WORLD_SIZE=%q: %d, %d ranks; want %d, %d", tc.world, tc.rank, tc.localWorld,
				env.World, l, tc.wantWorld, tc.wantLocal)
		}
	}
	one := EstimateFootprint(mustConfig(t), 128, 32, false, false)
	e := &experiment.Experiment{Objective: map[string]any{"name": "dse"}}
	e.Train.BatchSize, e.Model.MaxLength = 64, 32
	if four := footprint(e, mustConfig(t), 4); four.Activations*4 != one.Activations || four.Weights != one.Weights {
		t.Errorf("a quarter of the batch: %+v, whole: %+v", four, one)
	}
}

// A rank of a multi-rank CUDA job asks its own GPU only: without LOCAL_RANK (and without a GPU of its own from
// the launcher) it does not know which, and says so rather than ask GPU 0. The CPU asks the host.
func TestAvailableAsksTheRanksOwnDevice(t *testing.T) {
	if _, _, err := available(gotch.CudaBuilder(0), distEnv{World: 2, Rank: 1}); err == nil || !strings.Contains(err.Error(), "LOCAL_RANK") {
		t.Errorf("a rank without LOCAL_RANK: %v, want an error naming LOCAL_RANK", err)
	}
	avail, where, err := available(gotch.CPU, distEnv{World: 1})
	if err != nil || avail <= 0 || !strings.Contains(where, "available") && !strings.Contains(where, "cgroup") {
		t.Errorf("the CPU: %d, %q, %v", avail, where, err)
	}
}
