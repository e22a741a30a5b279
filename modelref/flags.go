package modelref

import (
	"flag"

	"github.com/sugarme/gotch"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/tokenizers"
)

// Encoding is what a command that turns texts into vectors (embed, serve) reads from its command line: the
// model, how a text becomes one vector, and where and how the forward pass runs.
type Encoding struct {
	Model, Pooling, Truncation, Device, Precision string
	MaxLength, Threads                            int
}

// AddFlags declares e's flags on fs; use says what the model is for in --model's help ("to embed with").
func (e *Encoding) AddFlags(fs *flag.FlagSet, use string) {
	fs.StringVar(&e.Model, "model", "", "model "+use+": a convrep run folder (its model/), a model folder, a hub name (bert-base-uncased, org/name) found in the HuggingFace cache or downloaded into it, or an experiment .toml (its untrained backbone) (required)")
	fs.StringVar(&e.Pooling, "pooling", "", "how token states become one vector: mean (over real tokens) or cls (default: what the model folder declares for sentence-transformers, else mean)")
	fs.IntVar(&e.MaxLength, "max-length", 0, "longest input in tokens, special tokens included; 0 = the max_seq_length the folder declares for sentence-transformers, else the model's limit")
	fs.StringVar(&e.Truncation, "truncation", "right", "which end of a too-long text is cut: right, or left (keeps a dialogue's latest turns)")
	fs.StringVar(&e.Device, "device", "cpu", "cpu, cuda or cuda:N")
	fs.StringVar(&e.Precision, "precision", "fp32", "arithmetic of the forward pass: fp32, or bf16 (on CUDA, or on a CPU with avx512_bf16 or AMX; vectors within cosine 0.9999 of fp32's)")
	fs.IntVar(&e.Threads, "threads", 0, "libtorch intra-op threads; 0 = libtorch's default")
}

// Parsed checks e's flags that have a fixed set of values, before a model loads: --pooling (empty: the
// folder's), --truncation, --device and --precision (for that device).
func (e *Encoding) Parsed() (tokenizers.Truncation, gotch.Device, models.Precision, error) {
	var none models.Precision
	if e.Pooling != "" {
		if _, err := models.ParsePooling(e.Pooling); err != nil {
			return 0, gotch.CPU, none, err
		}
	}
	trunc, err := ParseTruncation(e.Truncation)
	if err != nil {
		return 0, gotch.CPU, none, err
	}
	dev, err := torch.ParseDevice(e.Device)
	if err != nil {
		return 0, gotch.CPU, none, err
	}
	precision, err := models.ParsePrecision(e.Precision, dev)
	return trunc, dev, precision, err
}
