package trainer

import (
	"strings"
	"testing"
)

// FuzzDistEnv feeds torchrun's environment arbitrary values: readDistEnv must not panic, and what it accepts
// must be a consistent world (rank below world, local rank below local world).
//
//	go test -run XXX -fuzz FuzzDistEnv -fuzztime 60s ./trainer
func FuzzDistEnv(f *testing.F) {
	f.Add("0", "2", "0", "2", "127.0.0.1", "29500")
	f.Add("1", "2", "1", "", "node0", "1")
	f.Add("3", "2", "0", "1", "", "70000")
	f.Add("", "1", "", "", "", "")
	f.Fuzz(func(t *testing.T, rank, world, local, localWorld, addr, port string) {
		vars := map[string]string{"RANK": rank, "WORLD_SIZE": world, "LOCAL_RANK": local, "LOCAL_WORLD_SIZE": localWorld,
			"MASTER_ADDR": addr, "MASTER_PORT": port}
		env, err := readDistEnv(func(k string) string { return vars[k] })
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Error("an empty error")
			}
			return
		}
		if env.World < 1 || env.Rank < 0 || env.Rank >= env.World || env.LocalRank < 0 || env.Port < 0 || env.Port > 65535 {
			t.Errorf("accepted an inconsistent world %+v from %v", env, vars)
		}
	})
}
