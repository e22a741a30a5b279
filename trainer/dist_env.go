package trainer

import (
	"fmt"
	"strconv"
)

// distEnv is torchrun's environment contract, which SLURM and Kubernetes launchers follow too.
type distEnv struct {
	Rank, World, LocalRank int
	Addr                   string
	Port                   int
}

// readDistEnv reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; without WORLD_SIZE the run is
// a single process.
func readDistEnv(getenv func(string) string) (distEnv, error) {
	env := distEnv{World: 1, Addr: "127.0.0.1", Port: 29500}
	if getenv("WORLD_SIZE") == "" {
		return env, nil
	}
	num := func(name string, p *int, required bool) error {
		v := getenv(name)
		if v == "" {
			if required {
				return fmt.Errorf("%s is not set (WORLD_SIZE is %s)", name, getenv("WORLD_SIZE"))
			}
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%s=%q is not a non-negative integer", name, v)
		}
		*p = n
		return nil
	}
	for _, f := range []struct {
		name     string
		p        *int
		required bool
	}{{"WORLD_SIZE", &env.World, true}, {"RANK", &env.Rank, true}, {"LOCAL_RANK", &env.LocalRank, false}, {"MASTER_PORT", &env.Port, false}} {
		if err := num(f.name, f.p, f.required); err != nil {
			return env, err
		}
	}
	if a := getenv("MASTER_ADDR"); a != "" {
		env.Addr = a
	}
	switch {
	case env.World < 1:
		return env, fmt.Errorf("WORLD_SIZE=%d: at least one rank is needed", env.World)
	case env.Rank >= env.World:
		return env, fmt.Errorf("RANK=%d is not below WORLD_SIZE=%d", env.Rank, env.World)
	case env.Port < 1 || env.Port > 65535:
		return env, fmt.Errorf("MASTER_PORT=%d is not a TCP port", env.Port)
	}
	return env, nil
}
