package trainer

import (
	"strings"
	"testing"
)

func TestReadDistEnv(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want distEnv
		err  string
	}{
		{"single process", map[string]string{}, distEnv{World: 1, Addr: "127.0.0.1", Port: 29500}, ""},
		{"torchrun", map[string]string{"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1", "MASTER_ADDR": "n0", "MASTER_PORT": "1234"},
			distEnv{Rank: 3, World: 4, LocalRank: 1, LocalRankSet: true, Addr: "n0", Port: 1234}, ""},
		{"no local rank", map[string]string{"WORLD_SIZE": "2", "RANK": "1"}, distEnv{Rank: 1, World: 2, Addr: "127.0.0.1", Port: 29500}, ""},
		{"local rank too large", map[string]string{"WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "2"}, distEnv{}, "LOCAL_RANK=2 is not below WORLD_SIZE=2"},
		{"no rank", map[string]string{"WORLD_SIZE": "2"}, distEnv{}, "RANK is not set"},
		{"rank too large", map[string]string{"WORLD_SIZE": "2", "RANK": "2"}, distEnv{}, "RANK=2 is not below WORLD_SIZE=2"},
		{"not a number", map[string]string{"WORLD_SIZE": "two", "RANK": "0"}, distEnv{}, `WORLD_SIZE="two"`},
		{"negative", map[string]string{"WORLD_SIZE": "2", "RANK": "-1"}, distEnv{}, `RANK="-1"`},
		{"no ranks", map[string]string{"WORLD_SIZE": "0", "RANK": "0"}, distEnv{}, "at least one rank"},
		{"bad port", map[string]string{"WORLD_SIZE": "2", "RANK": "0", "MASTER_PORT": "99999"}, distEnv{}, "MASTER_PORT=99999"},
		{"convrep's launcher", map[string]string{"WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "1", GPUPerWorkerEnv: "1"},
			distEnv{Rank: 1, World: 2, LocalRank: 1, LocalRankSet: true, OwnGPU: true, Addr: "127.0.0.1", Port: 29500}, ""},
	} {
		got, err := readDistEnv(func(k string) string { return c.env[k] })
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && got != c.want:
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// bindRank: a CPU model takes Gloo and no GPU; a GPU model takes NCCL and the GPU LOCAL_RANK names, which
// must be given and below the node's GPU count, or cuda:0 when the launcher made it the rank's only GPU;
// NCCL on a CPU model is refused before any rendezvous.
func TestBindRank(t *testing.T) {
	env := func(localRank int, set bool) distEnv {
		return distEnv{Rank: 3, World: 4, LocalRank: localRank, LocalRankSet: set, Addr: "n0", Port: 1234}
	}
	own := func(e distEnv) distEnv { e.OwnGPU = true; return e }
	for _, c := range []struct {
		name        string
		env         distEnv
		backend     string
		cuda        bool
		index, gpus int
		wantBackend string
		wantGPU     int
		err         string
	}{
		{"cpu auto", env(1, true), "auto", false, 0, 0, "gloo", -1, ""},
		{"cpu without LOCAL_RANK", env(0, false), "auto", false, 0, 0, "gloo", -1, ""},
		{"cpu gloo", env(1, true), "gloo", false, 0, 0, "gloo", -1, ""},
		{"cpu nccl", env(1, true), "nccl", false, 0, 0, "", -1, `"nccl" needs model.device = "cuda"`},
		{"gpu auto", env(1, true), "auto", true, 0, 2, "nccl", 1, ""},
		{"gpu first", env(0, true), "nccl", true, 0, 8, "nccl", 0, ""},
		{"gpu last", env(7, true), "nccl", true, 0, 8, "nccl", 7, ""},
		{"gpu gloo", env(1, true), "gloo", true, 0, 2, "gloo", 1, ""},
		{"gpu without LOCAL_RANK", env(0, false), "auto", true, 0, 2, "", -1, "LOCAL_RANK is not set: each of the 4 ranks"},
		{"more ranks than GPUs", env(2, true), "nccl", true, 0, 2, "", -1, "LOCAL_RANK=2 but this node has 2 GPUs"},
		{"no GPU", env(0, true), "auto", true, 0, 0, "", -1, "sees no GPU"},
		{"a GPU named", env(0, true), "auto", true, 1, 2, "", -1, "model.device cuda:1 with 4 ranks"},
		{"its GPU alone", own(env(3, true)), "auto", true, 0, 1, "nccl", 0, ""},
		{"its GPU alone, gloo", own(env(1, true)), "gloo", true, 0, 1, "gloo", 0, ""},
		{"its GPU alone, hidden", own(env(1, true)), "auto", true, 0, 0, "", -1, "libtorch sees 0"},
		{"its GPU alone, but sees two", own(env(1, true)), "auto", true, 0, 2, "", -1, "libtorch sees 2"},
		{"its GPU alone, cpu", own(env(1, true)), "auto", false, 0, 0, "gloo", -1, ""},
	} {
		backend, gpu, err := bindRank(c.env, c.backend, c.cuda, c.index, c.gpus)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && (backend != c.wantBackend || gpu != c.wantGPU):
			t.Errorf("%s: backend %q on GPU %d, want %q on %d", c.name, backend, gpu, c.wantBackend, c.wantGPU)
		}
	}
}

func TestLayerOrderComparesNumbers(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"encoder.layer.2.w", "encoder.layer.10.w", true},
		{"encoder.layer.10.w", "encoder.layer.2.w", false},
		{"embeddings.w", "encoder.layer.0.w", true},
		{"encoder.layer.1", "encoder.layer.1.w", true},
	} {
		if got := layerOrder(c.a, c.b); got != c.want {
			t.Errorf("layerOrder(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
