package evaluatecmd

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"convrep/evaluate"
	"convrep/internal/atomicfile"
)

// common holds the flags every model-side task takes.
type common struct {
	model               modelRef
	data                dataFlags
	seeds               string
	splits, writeSplits string
	output              string
	quiet               bool
}

// registerHead adds --head, for the similarity-based tasks (fine-tuning trains a head of its own).
func (c *common) registerHead(fs *flag.FlagSet) {
	fs.StringVar(&c.model.head, "head", "", "with --checkpoint: embed through the contrastive head the checkpoint holds under this name after pooling (DSE's: contrast_head), instead of the pooled encoder alone")
}

// register adds the flags; maxLength is the task's default --max-length (0: the model's limit; -1: a
// fine-tuning task's --protocol sets it).
func (c *common) register(fs *flag.FlagSet, maxLength int) {
	fs.StringVar(&c.model.ref, "model", "", "model to evaluate: a convrep run folder, a model folder, a hub name, or an experiment .toml (its untrained backbone) (required); for response, a comma-separated list evaluates their ensemble (MGT Eq. 7)")
	fs.StringVar(&c.model.checkpoint, "checkpoint", "", "with an experiment .toml as --model: evaluate the weights of this checkpoint of its run (runs/X/checkpoints/step-N.safetensors); for response, a comma-separated list evaluates the ensemble of those checkpoints (one experiment file) or pairs with the --model list")
	fs.StringVar(&c.model.device, "device", "cpu", "cpu, cuda or cuda:N")
	fs.StringVar(&c.model.pooling, "pooling", "", "sentence embedding: mean (masked mean of the last layer, as DSE) or cls (default: what the model folder declares, else mean)")
	fs.IntVar(&c.model.maxLength, "max-length", maxLength, "longest input in tokens; 0 = the max_seq_length the model folder declares for sentence-transformers, else the model's limit (dialogue histories keep their latest turns). "+
		"Defaults as DSE App. B.1: intent and oos 64, response 128 (\"a number that can fit at least 99% of the samples\"); "+
		"-1 = each task's: in suite the single tasks' lengths, in fine-tuning tasks the --protocol's (DSE App. B.1: acts 32, intent 64, response 128; futuretod: the model's limit, TOD-BERT's 512)")
	fs.IntVar(&c.model.batch, "batch-size", 64, "texts per forward pass")
	fs.IntVar(&c.model.threads, "threads", 0, "libtorch intra-op threads; 0 = libtorch's default")
	fs.StringVar(&c.data.dataset, "dataset", "", "a dataset read in its upstream layout from --data-root, or the name given to --train/--test files")
	fs.StringVar(&c.data.root, "data-root", "", "folder of the evaluation sets (default ../shared/data/eval)")
	fs.StringVar(&c.data.train, "train", "", "a CSV or JSON lines file of labelled training examples (support sets are drawn from it)")
	fs.StringVar(&c.data.test, "test", "", "a CSV or JSON lines file of test examples (queries)")
	fs.StringVar(&c.data.textCol, "text-column", "text", "the text column or field of --train/--test")
	fs.StringVar(&c.data.labelCol, "label-column", "", "the label column or field of --train/--test (for response selection: the response); default: the other column of a two-column file, or the one named label, intent or category")
	fs.StringVar(&c.data.oosLabel, "oos-label", evaluate.OOSLabel, "the label that marks out-of-scope rows in --train/--test files")
	fs.StringVar(&c.seeds, "seeds", "0-9", "seeds of the sampled splits: a list (0,1,2) or a range (0-9)")
	fs.StringVar(&c.splits, "splits", "", "evaluate on the support sets / candidate lists saved in this folder instead of sampling them")
	fs.StringVar(&c.writeSplits, "write-splits", "", "save every sampled support set / candidate list as JSON in this folder")
	fs.StringVar(&c.output, "output", "", "write the result as JSON to this file (and a Markdown table beside it, .md); default: Markdown on stdout")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress bar")
}

func (c *common) splitIO() evaluate.SplitIO {
	return evaluate.SplitIO{Read: c.splits, Write: c.writeSplits}
}

// parseSeeds reads "0-9", "0,3,5" or "7".
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if lo, hi, ok := strings.Cut(part, "-"); ok {
			a, err1 := strconv.ParseUint(lo, 10, 64)
			b, err2 := strconv.ParseUint(hi, 10, 64)
			if err1 != nil || err2 != nil || b < a {
				return nil, fmt.Errorf("--seeds %q: %q is not a range like 0-9", s, part)
			}
			for x := a; x <= b; x++ {
				out = append(out, x)
			}
			continue
		}
		x, err := strconv.ParseUint(part, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds %q: %q is not a seed", s, part)
		}
		out = append(out, x)
	}
	return out, nil
}

// parseShots reads "1,5".
func parseShots(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || k < 1 {
			return nil, fmt.Errorf("--shots %q: %q is not a positive number", s, part)
		}
		out = append(out, k)
	}
	return out, nil
}

// writeResult writes r as JSON to path and as Markdown beside it (or Markdown to stdout without a path).
func writeResult(r *evaluate.Result, path string) error {
	if path == "" {
		return r.Markdown(os.Stdout)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := r.WriteJSON(path); err != nil {
		return err
	}
	var b strings.Builder
	if err := r.Markdown(&b); err != nil {
		return err
	}
	md := strings.TrimSuffix(path, filepath.Ext(path)) + ".md"
	return atomicfile.WriteFile(md, []byte(b.String()))
}
