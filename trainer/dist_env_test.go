package trainer

import (
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/experiment"
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
			distEnv{Rank: 3, World: 4, LocalRank: 1, Addr: "n0", Port: 1234}, ""},
		{"no rank", map[string]string{"WORLD_SIZE": "2"}, distEnv{}, "RANK is not set"},
		{"rank too large", map[string]string{"WORLD_SIZE": "2", "RANK": "2"}, distEnv{}, "RANK=2 is not below WORLD_SIZE=2"},
		{"not a number", map[string]string{"WORLD_SIZE": "two", "RANK": "0"}, distEnv{}, `WORLD_SIZE="two"`},
		{"negative", map[string]string{"WORLD_SIZE": "2", "RANK": "-1"}, distEnv{}, `RANK="-1"`},
		{"no ranks", map[string]string{"WORLD_SIZE": "0", "RANK": "0"}, distEnv{}, "at least one rank"},
		{"bad port", map[string]string{"WORLD_SIZE": "2", "RANK": "0", "MASTER_PORT": "99999"}, distEnv{}, "MASTER_PORT=99999"},
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

// The global batch must split evenly: the error comes before any rendezvous, naming the file.
func TestGlobalBatchMustDivideOverTheRanks(t *testing.T) {
	path := tinyExperiment(t, t.TempDir(), "")
	e, err := experiment.Load(path, []string{"train.batch_size=10"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("WORLD_SIZE", "4")
	t.Setenv("RANK", "0")
	_, err = joinCluster(e, gotch.CPU)
	if err == nil || !strings.Contains(err.Error(), "batch_size 10") || !strings.Contains(err.Error(), path) {
		t.Fatalf("batch 10 over 4 ranks: %v", err)
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
