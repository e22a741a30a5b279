package trainer

import (
	"fmt"
	"strconv"
)

// GPUPerWorkerEnv is set to 1 by convrep's launcher (cmd/train --nproc-per-node) in a worker whose
// CUDA_VISIBLE_DEVICES it narrowed to the worker's own GPU: the worker then trains on cuda:0, the only GPU it
// sees, whatever its LOCAL_RANK.
const GPUPerWorkerEnv = "CONVREP_GPU_PER_WORKER"

// distEnv is torchrun's environment contract, which SLURM and Kubernetes launchers follow too.
type distEnv struct {
	Rank, World, LocalRank int
	LocalRankSet           bool // LOCAL_RANK was given: a rank on a GPU needs it to find its own
	OwnGPU                 bool // GPUPerWorkerEnv: the process sees its GPU alone
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
	env.LocalRankSet = getenv("LOCAL_RANK") != ""
	env.OwnGPU = getenv(GPUPerWorkerEnv) == "1"
	if a := getenv("MASTER_ADDR"); a != "" {
		env.Addr = a
	}
	switch {
	case env.World < 1:
		return env, fmt.Errorf("WORLD_SIZE=%d: at least one rank is needed", env.World)
	case env.Rank >= env.World:
		return env, fmt.Errorf("RANK=%d is not below WORLD_SIZE=%d", env.Rank, env.World)
	case env.LocalRank >= env.World:
		return env, fmt.Errorf("LOCAL_RANK=%d is not below WORLD_SIZE=%d", env.LocalRank, env.World)
	case env.Port < 1 || env.Port > 65535:
		return env, fmt.Errorf("MASTER_PORT=%d is not a TCP port", env.Port)
	}
	return env, nil
}

// bindRank checks how a rank of a multi-rank job meets its device before any rendezvous, and returns the c10d
// backend ("auto" chooses NCCL for a GPU model, Gloo for a CPU one) and the GPU the rank trains on (-1 on the
// CPU). cuda tells whether model.device names a GPU and index which (cuda:N); gpus is how many GPUs this
// process's libtorch sees. Each rank of a node takes the GPU its LOCAL_RANK names, as torchrun's ranks do,
// unless convrep's launcher made the rank's GPU the only one it sees (OwnGPU): that one is cuda:0.
func bindRank(env distEnv, backend string, cuda bool, index, gpus int) (string, int, error) {
	if backend == "auto" {
		backend = "gloo"
		if cuda {
			backend = "nccl"
		}
	}
	if !cuda {
		if backend == "nccl" {
			return "", -1, fmt.Errorf(`distributed.backend "nccl" needs model.device = "cuda": NCCL moves only GPU tensors; a CPU model trains with "gloo"`)
		}
		return backend, -1, nil
	}
	switch {
	case index != 0:
		return "", -1, fmt.Errorf(`model.device cuda:%d with %d ranks: each rank takes the GPU its LOCAL_RANK names; write model.device = "cuda"`, index, env.World)
	case env.OwnGPU && gpus != 1:
		return "", -1, fmt.Errorf("the launcher gave this rank one GPU (CUDA_VISIBLE_DEVICES), but its libtorch sees %d", gpus)
	case env.OwnGPU:
		return backend, 0, nil
	case !env.LocalRankSet:
		return "", -1, fmt.Errorf("LOCAL_RANK is not set: each of the %d ranks on CUDA needs it to take a GPU of its own (torchrun sets it)", env.World)
	case gpus < 1:
		return "", -1, fmt.Errorf("model.device is cuda but this node's libtorch sees no GPU")
	case env.LocalRank >= gpus:
		return "", -1, fmt.Errorf("LOCAL_RANK=%d but this node has %d GPUs: start at most %d ranks on it (CUDA_VISIBLE_DEVICES may hide some)",
			env.LocalRank, gpus, gpus)
	}
	return backend, env.LocalRank, nil
}
