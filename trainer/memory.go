package trainer

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"convrep/models"
)

// Footprint is the memory a run needs, estimated from its configuration before anything is allocated: the
// fp32 weights, their gradients, the optimiser's state and, roughly, the activations of one micro-batch.
type Footprint struct {
	Params      int64 // the backbone's parameters (an objective's head adds a few more)
	Weights     int64 // bytes: fp32 master weights, and their bf16 copies under autocast
	Grads       int64 // bytes: fp32 gradients
	Optimizer   int64 // bytes: Adam's two fp32 moments
	Activations int64 // bytes: what backward keeps of one micro-batch, roughly
}

// Total is the sum of the parts, in bytes.
func (f Footprint) Total() int64 { return f.Weights + f.Grads + f.Optimizer + f.Activations }

// times is the footprint of n processes of this one's (the ranks of a node on its host memory).
func (f Footprint) times(n int64) Footprint {
	return Footprint{Params: f.Params, Weights: n * f.Weights, Grads: n * f.Grads, Optimizer: n * f.Optimizer,
		Activations: n * f.Activations}
}

// Checkpoint is about the size of one checkpoint: the weights and the optimiser's moments, in fp32.
func (f Footprint) Checkpoint() int64 { return f.Params * 4 * 3 }

// backboneParams counts the parameters of a BERT-family encoder of config c as models.New builds it:
// embeddings (words, positions, token types, LayerNorm), and per layer Q, K, V and the attention output (h×h and
// bias each), two LayerNorms and the feed-forward pair (h×I, I×h and biases). Heads (BERT's pooler, an MLM
// head, an objective's projection) come on top.
func backboneParams(c *models.Config) int64 {
	h, i := c.HiddenSize, c.IntermediateSize
	emb := c.VocabSize*h + c.TypeVocabSize*h + 2*h
	if !c.SinusoidalPositions {
		emb += c.MaxPositions * h
	}
	layer := 4*(h*h+h) + 2*(2*h) + (h*i + i) + (i*h + h)
	return emb + c.NumLayers*layer
}

// EstimateFootprint is the footprint of training an encoder of config c on micro-batches of rows sequences of
// tokens tokens: fp32 weights, gradients and Adam's moments (4, 4 and 8 bytes a parameter) with a bf16 copy of
// the weights under bf16 autocast (2 more); activations after Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models", §4.1, Eq. 1): s·b·h·(34 + 5·a·s/h) bytes a layer with 16-bit
// activations, twice that in fp32. vocabLogits adds the masked-LM logits and their gradient (rows × tokens ×
// vocabulary floats twice) for objectives that predict tokens.
func EstimateFootprint(c *models.Config, rows, tokens int64, bf16, vocabLogits bool) Footprint {
	p := backboneParams(c)
	f := Footprint{Params: p, Weights: 4 * p, Grads: 4 * p, Optimizer: 8 * p}
	actBytes := int64(2) // fp32 activations: twice Eq. 1's 16-bit bytes
	if bf16 {
		f.Weights += 2 * p
		actBytes = 1
	}
	s, b, h, a := tokens, rows, c.HiddenSize, c.NumHeads
	perLayer := s * b * (34*h + 5*a*s) * actBytes
	f.Activations = c.NumLayers * perLayer
	if vocabLogits {
		f.Activations += 2 * rows * tokens * c.VocabSize * 4
	}
	return f
}

// hostAvailable is the memory this process can still take on the host: the kernel's MemAvailable, bounded by
// the cgroup's limit less its use where one is set (cgroup v2's memory.max, or v1's memory.limit_in_bytes).
func hostAvailable() (int64, string, error) {
	avail, err := memAvailable("/proc/meminfo")
	if err != nil {
		return 0, "", err
	}
	where := "the host's available memory"
	for _, g := range []struct{ limit, usage string }{
		{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"},
	} {
		limit, ok1 := readBytes(g.limit)
		usage, ok2 := readBytes(g.usage)
		if ok1 && ok2 && limit-usage < avail {
			avail, where = max(0, limit-usage), "the cgroup's limit less its use ("+g.limit+")"
		}
	}
	return avail, where, nil
}

// memAvailable reads MemAvailable from a meminfo file, in bytes.
func memAvailable(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "MemAvailable:   21304212 kB"
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 2 && fields[1] == "kB" {
				if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					return kb * 1024, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("%s: no MemAvailable line", path)
}

// readBytes reads a cgroup file holding one number of bytes; "max" (no limit) and anything unreadable are not ok.
func readBytes(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil && v > 0 && v < 1<<62
}

// humanBytes writes a byte count as people read one: 410 GB, 1.2 GB, 300 MB.
func humanBytes(n int64) string {
	switch {
	case n >= 100e9:
		return fmt.Sprintf("%.0f GB", float64(n)/1e9)
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	default:
		return fmt.Sprintf("%.0f kB", float64(n)/1e3)
	}
}
