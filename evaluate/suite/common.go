package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"convrep/evaluate"
	"convrep/internal/atomicfile"
)

// flags declares the flags of Common; maxLength is the task's default --max-length (0: the model's limit; -1:
// a fine-tuning task's --protocol sets it, and the suite's tasks their own).
func (c *Common) flags(f *Flags, maxLength int) {
	f.StringVar(&c.Model.Ref, "model", "", "model to evaluate: a convrep run folder, a model folder, a hub name, or an experiment .toml (its untrained backbone) (required); for response, a comma-separated list evaluates their ensemble (MGT Eq. 7)")
	f.StringVar(&c.Model.Checkpoint, "checkpoint", "", "with an experiment .toml as --model: evaluate the weights of this checkpoint of its run (runs/X/checkpoints/step-N.safetensors); for response, a comma-separated list evaluates the ensemble of those checkpoints (one experiment file) or pairs with the --model list")
	f.StringVar(&c.Model.Device, "device", "cpu", "cpu, cuda or cuda:N")
	f.StringVar(&c.Model.Pooling, "pooling", "", "sentence embedding: mean (masked mean of the last layer, as DSE) or cls (default: what the model folder declares, else mean)")
	f.IntVar(&c.Model.MaxLength, "max-length", maxLength, "longest input in tokens; 0 = the max_seq_length the model folder declares for sentence-transformers, else the model's limit (dialogue histories keep their latest turns). "+
		"Defaults as DSE App. B.1: intent and oos 64, response 128 (\"a number that can fit at least 99% of the samples\"); "+
		"-1 = each task's: in suite the single tasks' lengths, in fine-tuning tasks the --protocol's (DSE App. B.1: acts 32, intent 64, response 128; futuretod: the model's limit, TOD-BERT's 512)")
	f.IntVar(&c.Model.Batch, "batch-size", 64, "texts per forward pass")
	f.IntVar(&c.Model.Threads, "threads", 0, "libtorch intra-op threads; 0 = libtorch's default")
	f.StringVar(&c.Data.Dataset, "dataset", "", "a dataset read in its upstream layout from --data-root, or the name given to --train/--test files")
	f.StringVar(&c.Data.Root, "data-root", "", "folder of the evaluation sets (default: data/eval in the shared folder, $CONVREP_SHARED or else ../shared from the working directory)")
	f.StringVar(&c.Data.Train, "train", "", "a CSV or JSON lines file of labelled training examples (support sets are drawn from it)")
	f.StringVar(&c.Data.Test, "test", "", "a CSV or JSON lines file of test examples (queries)")
	f.StringVar(&c.Data.TextColumn, "text-column", "text", "the text column or field of --train/--test")
	f.StringVar(&c.Data.LabelColumn, "label-column", "", "the label column or field of --train/--test (for response selection: the response); default: the other column of a two-column file, or the one named label, intent or category")
	f.StringVar(&c.Data.OOSLabel, "oos-label", evaluate.OOSLabel, "the label that marks out-of-scope rows in --train/--test files")
	f.Parsed("seeds", "0-9", "seeds of the sampled splits: a list (0,1,2) or a range (0-9)", func(s string) (err error) {
		c.Seeds, err = ParseSeeds(s)
		return err
	})
	f.StringVar(&c.Splits, "splits", "", "evaluate on the support sets / candidate lists saved in this folder instead of sampling them")
	f.StringVar(&c.WriteSplits, "write-splits", "", "save every sampled support set / candidate list as JSON in this folder")
	f.StringVar(&c.Output, "output", "", "write the result as JSON to this file (and a Markdown table beside it, .md), or into this folder as TASK.json; default: Markdown on stdout")
	f.BoolVar(&c.Quiet, "quiet", false, "no progress bar")
}

// headFlag declares --head, for the similarity-based tasks (fine-tuning trains a head of its own).
func (c *Common) headFlag(f *Flags) {
	f.StringVar(&c.Model.Head, "head", "", "with --checkpoint: embed through the contrastive head the checkpoint holds under this name after pooling (DSE's: contrast_head), instead of the pooled encoder alone")
}

// shotsFlag declares a list of shot counts (--shots 1,5); with optional, an empty list is none.
func shotsFlag(f *Flags, dst *[]int, value, usage string, optional bool) {
	f.Parsed("shots", value, usage, func(s string) (err error) {
		if optional && s == "" {
			*dst = nil
			return nil
		}
		*dst, err = ParseShots(s)
		return err
	})
}

// Common holds the options every model-side task takes.
type Common struct {
	Model               Model
	Data                Data
	Seeds               []uint64 // seeds of the sampled splits, one run each
	Splits, WriteSplits string   // folders to read saved splits from, and to save the sampled ones in
	Output              string   // the result's JSON file ("": Markdown on stdout)
	Quiet               bool     // no progress bar
}

func (c *Common) splitIO() evaluate.SplitIO {
	return evaluate.SplitIO{Read: c.Splits, Write: c.WriteSplits}
}

// ParseSeeds reads "0-9", "0,3,5" or "7".
func ParseSeeds(s string) ([]uint64, error) {
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

// ParseShots reads "1,5".
func ParseShots(s string) ([]int, error) {
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

// writeResult writes r as JSON to path and as Markdown beside it (or Markdown to stdout without a path). A
// path that is a folder (one that exists, as --write-splits may have made it, or ends in a slash) gets the
// result inside it, named after the task.
func writeResult(r *evaluate.Result, path string) error {
	if path == "" {
		return r.Markdown(os.Stdout)
	}
	if st, err := os.Stat(path); (err == nil && st.IsDir()) || strings.HasSuffix(path, string(filepath.Separator)) {
		path = filepath.Join(path, strings.NewReplacer(":", "-", "/", "-").Replace(r.Task)+".json")
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

// splitList splits a comma-separated flag value, dropping blanks around entries; an empty value is no entry.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
