package trainer

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/checkpoint"
	"convrep/experiment"
	"convrep/internal/torch"
	"convrep/trainer/optim"
)

// Data-parallel training on libtorch's c10d. Every rank holds the whole model and reads its own contiguous
// share of each global batch; during the backward pass the gradients are averaged over the ranks, so every
// rank takes the same optimiser step and the weights stay equal. The global batch sequence does not depend
// on the number of ranks: a run resumes on another number of ranks where it stopped, and W ranks with
// B/W rows each follow the trajectory of one process with B rows.

// cluster is this process's place in the job and its process group (nil for a single process).
type cluster struct {
	env         distEnv
	group       *torch.Group
	bucketBytes int64
	local       bool           // negatives stay on their rank
	overlap     *torch.Overlap // the gradient averaging hooks
	dev         gotch.Device   // where the backend moves tensors: the CPU for Gloo, this rank's GPU for NCCL
	gpu         int            // the GPU this rank trains on, -1 for none
}

// joinCluster joins the job the environment describes, with Gloo on CPU and NCCL on CUDA unless the
// experiment names a backend.
func joinCluster(e *experiment.Experiment, dev gotch.Device) (*cluster, error) {
	env, err := readDistEnv(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("distributed environment: %w", err)
	}
	d := e.Distributed
	c := &cluster{env: env, bucketBytes: int64(d.BucketMB) << 20, local: d.LocalNegatives, dev: gotch.CPU, gpu: -1}
	if env.World == 1 {
		return c, nil
	}
	if e.Train.BatchSize%env.World != 0 {
		return nil, fmt.Errorf("%s: train.batch_size %d is the global batch and must divide evenly over %d ranks",
			e.Path(), e.Train.BatchSize, env.World)
	}
	index, gpus := 0, 0
	if dev.IsCuda() {
		index, gpus = dev.Value, int(gotch.CUDA.DeviceCount())
	}
	backend, gpu, err := bindRank(env, d.Backend, dev.IsCuda(), index, gpus)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Path(), err)
	}
	c.gpu = gpu
	if !torch.HasBackend(backend) {
		return nil, fmt.Errorf("distributed.backend %q: this build has no such c10d backend (Gloo needs libgloo-dev's headers at set-up; NCCL a CUDA libtorch and NCCL's headers)", backend)
	}
	// The rank's GPU is made current before the group exists, so that neither NCCL nor a stray CUDA call
	// opens a context on GPU 0; NCCL's group is also bound to it (its collectives and barrier run there).
	groupDev := -1
	if gpu >= 0 {
		if err := torch.SetCUDADevice(gpu); err != nil {
			return nil, err
		}
		if backend == "nccl" {
			c.dev, groupDev = gotch.CudaBuilder(uint(gpu)), gpu
		}
	}
	c.group, err = torch.NewGroup(backend, env.Addr, env.Port, env.Rank, env.World, groupDev, time.Duration(d.TimeoutS)*time.Second)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *cluster) world() int   { return c.env.World }
func (c *cluster) leader() bool { return c.env.Rank == 0 }
func (c *cluster) multi() bool  { return c.group != nil }
func (c *cluster) rank() int    { return c.env.Rank }

func (c *cluster) close() {
	c.overlap.Close()
	c.group.Close()
}

// shard is this rank's contiguous share of a global micro-batch.
func (c *cluster) shard(idx []int) []int {
	n := len(idx) / c.env.World
	return idx[c.env.Rank*n : (c.env.Rank+1)*n]
}

// broadcast gives every rank rank 0's values of xs (the initial or restored weights).
func (c *cluster) broadcast(xs []*ts.Tensor) error {
	if !c.multi() {
		return nil
	}
	return torch.Catch("broadcast from rank 0", func() error { return c.group.Broadcast(xs, 0) })
}

// watch registers the overlapped gradient averaging (torch.Overlap) on the trained parameters, handed over
// in the order backward reaches them: the reverse of the model's, layers compared by number.
func (c *cluster) watch(groups []optim.Group) error {
	if !c.multi() {
		return nil
	}
	var names []string
	byName := map[string]*ts.Tensor{}
	for _, g := range groups {
		for i, name := range g.ParamNames {
			names, byName[name] = append(names, name), g.Params[i]
		}
	}
	sort.Slice(names, func(i, j int) bool { return layerOrder(names[j], names[i]) })
	params := make([]*ts.Tensor, len(names))
	for i, name := range names {
		params[i] = byName[name]
	}
	var err error
	c.overlap, err = c.group.NewOverlap(params, c.bucketBytes)
	return err
}

// layerOrder sorts parameter names as the model runs: dotted parts compared as numbers where both are.
func layerOrder(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] == pb[i] {
			continue
		}
		na, errA := strconv.Atoi(pa[i])
		nb, errB := strconv.Atoi(pb[i])
		if errA == nil && errB == nil {
			return na < nb
		}
		return pa[i] < pb[i]
	}
	return len(pa) < len(pb)
}

// arm makes the coming backward pass (a step's last micro-batch) average its gradients over the ranks.
func (c *cluster) arm() {
	if c.overlap != nil {
		c.overlap.Arm()
	}
}

// finish waits for the averaging the armed backward pass started.
func (c *cluster) finish() error {
	if c.overlap == nil {
		return nil
	}
	return torch.Catch("average gradients", c.overlap.Finish)
}

// agree sums x, a few numbers of this rank's steps since the last agreement (the loss, the gradient norms,
// the stop flag: see settle), over the ranks, so that every rank reads the same numbers and all stop after
// the same step. The sums come back as a new tensor on the backend's device; with one process, x itself.
func (c *cluster) agree(x *ts.Tensor) (sum *ts.Tensor, err error) {
	err = torch.Catch("all-reduce", func() error {
		if !c.multi() {
			sum = x.MustShallowClone()
			return nil
		}
		sum = x.MustToDevice(c.dev, x.DType(), false, true, false)
		return c.group.AllReduce(sum, torch.Sum)
	})
	if err != nil {
		torch.Drop(sum)
		return nil, fmt.Errorf("agree on the steps: %w", err)
	}
	return sum, nil
}

// gather is an all-gather through which gradients flow back to this rank's rows: every rank's x stacked in
// rank order, with this rank's slot holding x itself. Each rank then computes the same loss over the global
// batch; torch.distributed.nn's all_gather would all-reduce the gathered gradient in the backward pass,
// which, the loss being the same on every rank, is W times this rank's own gradient. The slot carries that
// factor instead, x + ((W−1)x − stop_gradient((W−1)x)), whose value is exactly x, and saves the collective;
// the ranks' mean gradient (the overlapped all-reduce) is then the global loss's gradient.
func (c *cluster) gather(x *ts.Tensor) (*ts.Tensor, error) {
	if !c.multi() {
		return x.MustShallowClone(), nil
	}
	var out *ts.Tensor
	err := torch.Catch("gather the global batch", func() error {
		d := x.MustDetach(false)
		all, err := c.group.AllGather(d)
		d.MustDrop()
		if err != nil {
			return err
		}
		defer all.MustDrop()
		w := float64(c.env.World)
		scaled := x.MustMulScalar(ts.FloatScalar(w-1), false)
		still := scaled.MustDetach(false)
		diff := scaled.MustSub(still, false)
		own := x.MustAdd(diff, false)
		torch.Drop(scaled, still, diff)
		defer own.MustDrop()
		n := x.MustSize()[0]
		var parts []*ts.Tensor
		if r := int64(c.env.Rank); r > 0 {
			parts = append(parts, all.MustNarrow(0, 0, r*n, false))
		}
		parts = append(parts, own)
		if after := int64(c.env.World-c.env.Rank-1) * n; after > 0 {
			parts = append(parts, all.MustNarrow(0, int64(c.env.Rank+1)*n, after, false))
		}
		out = ts.MustCat(parts, 0)
		for _, p := range parts {
			if p != own {
				p.MustDrop()
			}
		}
		return nil
	})
	return out, err
}

// syncRanks starts every rank from rank 0's state: the weights and the objective's state are broadcast (after
// a resume every rank read the same checkpoint; the broadcast also covers ranks that initialised
// differently), and every rank must stand at the same step. Each rank's generators that the checkpoint did
// not restore are seeded from the seed and the rank (seedRNG).
func (t *Trainer) syncRanks() error {
	if !t.cl.multi() {
		return t.seedRNG()
	}
	var xs []*ts.Tensor
	for _, name := range slices.Sorted(maps.Keys(t.params)) {
		xs = append(xs, t.params[name])
	}
	state := t.objectiveState()
	for _, name := range slices.Sorted(maps.Keys(state)) {
		xs = append(xs, state[name])
	}
	if err := t.cl.broadcast(xs); err != nil {
		return err
	}
	lo, hi, err := t.cl.spread(float64(t.pos.Step))
	if err != nil {
		return err
	}
	if lo != hi {
		return fmt.Errorf("the ranks resumed at different steps (%v to %v): their output_dir must be the same folder, shared between nodes", lo, hi)
	}
	return t.seedRNG()
}

// spread is the smallest and largest of v over the ranks.
func (c *cluster) spread(v float64) (lo, hi float64, err error) {
	out, err := c.reduce([]float64{-v, v}, torch.Max)
	if err != nil {
		return 0, 0, fmt.Errorf("compare the ranks: %w", err)
	}
	return -out[0], out[1], nil
}

// reduce combines a few numbers over the ranks. They travel on the backend's device (NCCL moves only GPU
// tensors).
func (c *cluster) reduce(vals []float64, op torch.ReduceOp) (out []float64, err error) {
	err = torch.Catch("all-reduce", func() error {
		x := ts.MustOfSlice(vals).MustTo(c.dev, true)
		defer x.MustDrop()
		if err := c.group.AllReduce(x, op); err != nil {
			return err
		}
		out = x.MustTo(gotch.CPU, false).Float64Values(true)
		return nil
	})
	return out, err
}

// rngStates is every rank's generator states for a run on dev (checkpoint.RankRNG) in rank order, on rank 0
// (nil on the others). The ranks' states have the same sizes, so one all-gather of each rank's CPU and CUDA
// states laid end to end carries them.
func (c *cluster) rngStates(dev gotch.Device) ([]checkpoint.RankRNG, error) {
	own, err := ownRNG(dev)
	if err != nil || !c.multi() {
		return []checkpoint.RankRNG{own}, err
	}
	flat := append(append([]byte{}, own.CPU...), own.CUDA...)
	var all []byte
	err = torch.Catch("gather the ranks' RNG states", func() error {
		x := ts.MustOfSlice(flat).MustTo(c.dev, true)
		defer x.MustDrop()
		g, err := c.group.AllGather(x)
		if err != nil {
			return err
		}
		g = g.MustTo(gotch.CPU, true)
		defer g.MustDrop()
		all = make([]byte, g.Numel())
		g.MustCopyData(all, uint(len(all)))
		return nil
	})
	if err != nil || !c.leader() {
		return nil, err
	}
	n, cpu := len(flat), len(own.CPU)
	states := make([]checkpoint.RankRNG, c.env.World)
	for r := range states {
		states[r].CPU = all[r*n : r*n+cpu]
		if own.CUDA != nil {
			states[r].CUDA = all[r*n+cpu : (r+1)*n]
		}
	}
	return states, nil
}
