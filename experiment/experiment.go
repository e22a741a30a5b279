// Package experiment is an experiment file of experiments/: the strict TOML reading with --set overrides, the
// checks that need no disk, the digest that ties checkpoints to their settings, and the backbone the
// experiment trains (untrained, or at one of its checkpoints), which cmd/train and cmd/evaluate both build.
package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	_ "convrep/objectives/all" // the built-in objectives read their [objective] tables

	"github.com/BurntSushi/toml"

	"convrep/datasets"
	"convrep/internal/settings"
	"convrep/internal/shared"
	"convrep/objectives"
)

// Experiment is one TOML file of experiments/. Every key is listed here or in the objective's own table;
// an unknown key is an error. The paths hold what Load resolved them to (paths.go): a relative path in the
// file is taken from the file's folder.
type Experiment struct {
	Name      string         `toml:"name"`
	OutputDir string         `toml:"output_dir"`
	Seed      int64          `toml:"seed"`
	Model     ModelConfig    `toml:"model"`
	Data      DataConfig     `toml:"data"`
	Objective map[string]any `toml:"objective"` // name plus the objective's settings, read by the objective
	Train     TrainConfig    `toml:"train"`
	// Distributed tunes data-parallel runs; the ranks themselves come from the launcher's environment.
	Distributed DistributedConfig `toml:"distributed" json:"-"`

	path      string            // the file it was read from
	written   *writtenPaths     // the paths as the file and --set wrote them (resolvePaths), for the digest
	objective objectives.Config // the [objective] table, read by its objective
	// headLRScale is what train.lr was scaled by to give train.head_lr when the file left it out; 0 when set.
	headLRScale float64
}

// Path is the file the experiment was read from.
func (e *Experiment) Path() string { return e.path }

// ObjectiveConfig is the experiment's objective with its settings read (strictly, once, by Load).
func (e *Experiment) ObjectiveConfig() objectives.Config { return e.objective }

// ModelConfig names the backbone: a pretrained one (a folder, or a hub name such as bert-base-uncased), or a
// randomly initialised one when Random is set.
type ModelConfig struct {
	Backbone   string `toml:"backbone"`
	Tokenizer  string `toml:"tokenizer"` // tokenizer folder; default: the backbone's folder
	MaxLength  int    `toml:"max_length"`
	Truncation string `toml:"truncation"` // right (default) or left
	Device     string `toml:"device"`
	// Dropout replaces a pretrained backbone's hidden and attention dropout (FutureTOD §3.1 trains with 0.2);
	// nil keeps its config's. A random backbone takes [model.random] dropout instead.
	Dropout *float64      `toml:"dropout" json:"dropout,omitempty"`
	Random  *RandomConfig `toml:"random"`
}

// RandomConfig is a model built from scratch (no download): the architecture family and its sizes.
type RandomConfig struct {
	Arch             string  `toml:"arch"`
	Layers           int64   `toml:"layers"`
	Hidden           int64   `toml:"hidden"`
	Heads            int64   `toml:"heads"`
	Intermediate     int64   `toml:"intermediate"`
	MaxPositions     int64   `toml:"max_positions"`
	Dropout          float64 `toml:"dropout"`
	InitializerRange float64 `toml:"initializer_range"`
}

// DataConfig says which corpora and files to read and how to make examples of them.
type DataConfig struct {
	Root    string   `toml:"root"`
	Corpora []string `toml:"corpora"`
	// Files are dialogue files of the user's own, read after the corpora (datasets.FileSet): the unified
	// JSONL, CSV/TSV or Parquet (a folder: its Parquet shards). Columns and Speakers say how CSV, TSV and
	// Parquet rows are read. All three
	// stay out of the digest when unset, as runs written before them exist.
	Files            []string       `toml:"files" json:"files,omitempty"`
	Columns          ColumnsConfig  `toml:"columns" json:"columns,omitzero"`
	Speakers         SpeakersConfig `toml:"speakers" json:"speakers,omitzero"`
	MergeSameSpeaker bool           `toml:"merge_same_speaker"`
	// MetaLWOZMultiWOZ keeps the 2,924 MultiWOZ 2.0 dialogues of MetaLWOZ's archive, 430 of them in MultiWOZ
	// 2.1's val/test sets (datasets.ReadOptions); false drops them. Left out of the digest when false.
	MetaLWOZMultiWOZ bool   `toml:"metalwoz_multiwoz" json:"metalwoz_multiwoz,omitempty"`
	SkipBad          bool   `toml:"skip_bad"`
	Pairs            string `toml:"pairs"` // dse, dse2-1, dse3-1, dse123-1, dropout
	BothDirections   bool   `toml:"both_directions"`
	MinWords         int    `toml:"min_words"`
	CacheDir         string `toml:"cache_dir"`    // default: cache beside output_dir's folder (runs/cache)
	MaxExamples      int    `toml:"max_examples"` // 0 = all; a cap for quick runs
}

// ColumnsConfig is [data.columns]: the column names of a CSV, TSV or Parquet file of turns, one row per
// turn (datasets.Columns; "" takes the default).
type ColumnsConfig struct {
	Dialogue string `toml:"dialogue" json:"dialogue,omitempty"`
	Turn     string `toml:"turn" json:"turn,omitempty"`
	Speaker  string `toml:"speaker" json:"speaker,omitempty"`
	Text     string `toml:"text" json:"text,omitempty"`
	Domain   string `toml:"domain" json:"domain,omitempty"`
	// Messages and FirstSpeaker read dialogue records (chat JSONL, JSON, Parquet a dialogue per row).
	Messages     string `toml:"messages" json:"messages,omitempty"`
	FirstSpeaker string `toml:"first_speaker" json:"first_speaker,omitempty"`
}

// SpeakersConfig is [data.speakers]: the speaker labels read as the user and as the system
// (datasets.Speakers; an empty list takes the default).
type SpeakersConfig struct {
	User   []string `toml:"user" json:"user,omitempty"`
	System []string `toml:"system" json:"system,omitempty"`
	Drop   []string `toml:"drop" json:"drop,omitempty"`
}

// FileSet is data.files (resolved by Load) with the column and speaker mapping, nil when no file is named.
func (d DataConfig) FileSet() *datasets.FileSet {
	if len(d.Files) == 0 {
		return nil
	}
	s := &datasets.FileSet{
		Columns: datasets.Columns{Dialogue: d.Columns.Dialogue, Turn: d.Columns.Turn, Speaker: d.Columns.Speaker,
			Text: d.Columns.Text, Domain: d.Columns.Domain, Messages: d.Columns.Messages, FirstSpeaker: d.Columns.FirstSpeaker},
		Speakers: datasets.Speakers{User: d.Speakers.User, System: d.Speakers.System, Drop: d.Speakers.Drop},
	}
	s.Paths = append(s.Paths, d.Files...)
	return s
}

// TrainConfig holds the optimisation knobs the papers use.
type TrainConfig struct {
	BatchSize        int     `toml:"batch_size"`
	Epochs           int     `toml:"epochs"`
	MaxSteps         int64   `toml:"max_steps"` // 0 = epochs decide
	Optimizer        string  `toml:"optimizer"` // adam or adamw
	LR               float64 `toml:"lr"`        // encoder
	HeadLR           float64 `toml:"head_lr"`   // parameters the objective adds (e.g. DSE's contrastive head)
	WeightDecay      float64 `toml:"weight_decay"`
	Schedule         string  `toml:"schedule"` // constant, constant_warmup, linear
	WarmupSteps      int64   `toml:"warmup_steps"`
	MaxGradNorm      float64 `toml:"max_grad_norm"` // 0 = no clipping
	GradAccumulation int     `toml:"grad_accumulation"`
	LogEvery         int64   `toml:"log_every"`
	CheckpointEvery  int64   `toml:"checkpoint_every"`
	KeepCheckpoints  int     `toml:"keep_checkpoints"`
	Threads          int     `toml:"threads"`
	// Precision is fp32 (the default) or bf16: the forward pass and the loss under libtorch's autocast, with
	// fp32 master weights and gradients (left out of the digest when fp32, as runs written before it exist).
	Precision string `toml:"precision" json:"precision,omitempty"`
	// Deterministic restricts libtorch to deterministic kernels (torch.use_deterministic_algorithms): on a GPU
	// it is what makes a resumed run bit-identical to an uninterrupted one, at some cost in speed; an op with
	// no deterministic kernel then fails naming itself. CPU runs are deterministic without it. It changes no
	// result, so the digest leaves it out and a run may be resumed with it switched.
	Deterministic bool `toml:"deterministic" json:"-"`
	// SkipMemoryCheck starts the run even when its estimated memory (weights, gradients, optimiser state and
	// one micro-batch's activations) exceeds what the device has; it changes no result (json:"-").
	SkipMemoryCheck bool `toml:"skip_memory_check" json:"-"`
	// ValidShare is the share of the pretraining dialogues held out for validation (0 = none, the
	// default); EvalEvery the steps between two validations (a multiple of log_every, so each lands on a
	// metrics line); EarlyStoppingPatience the validations without improvement after which the run stops
	// (0 = never). Zero values stay out of the digest, as runs written before them exist; eval_every and the
	// patience change no step's result and are left out of it altogether (Digest).
	ValidShare            float64 `toml:"valid_share" json:"valid_share,omitempty"`
	EvalEvery             int64   `toml:"eval_every" json:"eval_every,omitempty"`
	EarlyStoppingPatience int64   `toml:"early_stopping_patience" json:"early_stopping_patience,omitempty"`
	// DropLast drops each epoch's last partial batch (torch's DataLoader drop_last); false keeps it as a
	// smaller final step. Unset, the objective decides (objectives.TrainDefaults): DSE keeps it, as its
	// authors' loader does, the others drop it. The digest leaves out true, which every run made before the
	// setting did.
	DropLast *bool `toml:"drop_last" json:"drop_last,omitempty"`
	// TensorBoard writes each metrics line's scalars into a TensorBoard event file beside metrics.jsonl as
	// the run goes (true when left out; WritesTensorBoard). It is output only: the digest leaves it out, so
	// a run may be resumed with it switched, and checkpoints written before it existed still resume.
	TensorBoard *bool `toml:"tensorboard" json:"-"`
	// CUDAGraphs captures the whole training step (forward, loss, backward, clipping, the optimiser) as one
	// CUDA graph and replays it each step (trainer/graphs.go), after three eager warm-up steps; the batches are
	// padded to fixed widths so that their shapes repeat. Where it cannot apply (the CPU, several ranks,
	// gradient accumulation, an objective whose batches do not list their tensors) the run logs why and
	// steps eagerly. The padding changes the random draws (dropout masks follow the tensors' sizes), not
	// what is computed, so the digest leaves it out and a run may be resumed with it switched.
	CUDAGraphs bool `toml:"cuda_graphs" json:"-"`
	// FusedKernels = true runs the encoder's dropout + residual + LayerNorm and bias + GELU on convrep's own
	// CUDA kernels (internal/gpu/kernels, compiled at run time with NVRTC: internal/gpu/jit) on a GPU; a run that
	// cannot load them fails. Unset or false, libtorch's composites: on an H200 the kernels as they are made
	// the BERT-base step slower (docs/gpu.md, 2026-11-27). On a CPU the composites run whatever it says. The
	// function is the same (the dropout masks are drawn differently, and under bf16 the residual stream stays
	// in bf16), so the digest leaves it out and a run may be resumed with it switched.
	FusedKernels *bool `toml:"fused_kernels" json:"-"`
}

// DistributedConfig tunes data-parallel training (trainer/dist.go). train.batch_size is the global batch.
type DistributedConfig struct {
	Backend        string `toml:"backend"`         // auto (Gloo on CPU, NCCL on CUDA), gloo or nccl
	LocalNegatives bool   `toml:"local_negatives"` // contrastive objectives draw negatives from their rank's rows only
	BucketMB       int    `toml:"bucket_mb"`       // gradient all-reduce bucket size in MiB
	TimeoutS       int    `toml:"timeout_s"`       // rendezvous and collective timeout in seconds
}

// defaults fills what an experiment may leave out.
func (e *Experiment) defaults() {
	setDefault(&e.Model.MaxLength, 32)
	setDefault(&e.Model.Truncation, "right")
	setDefault(&e.Model.Device, "cpu")
	setDefault(&e.Data.Pairs, "dse")
	setDefault(&e.Train.Epochs, 1)
	setDefault(&e.Train.Optimizer, "adam")
	setDefault(&e.Train.Schedule, "constant")
	setDefault(&e.Train.GradAccumulation, 1)
	setDefault(&e.Train.LogEvery, 10)
	setDefault(&e.Train.CheckpointEvery, 500)
	setDefault(&e.Train.KeepCheckpoints, 2)
	setDefault(&e.Distributed.Backend, "auto")
	setDefault(&e.Distributed.BucketMB, 25)
	setDefault(&e.Distributed.TimeoutS, 600)
	// The objective's own defaults; a table that does not parse is reported by validate.
	var td objectives.TrainDefaults
	if cfg, err := objectives.Parse(e.Objective); err == nil {
		td = objectives.TrainDefaultsOf(cfg)
	}
	if e.Train.HeadLR == 0 {
		e.headLRScale = 1
		if td.HeadLRScale > 0 {
			e.headLRScale = td.HeadLRScale
		}
		e.Train.HeadLR = e.Train.LR * e.headLRScale
	}
	if e.Train.DropLast == nil {
		drop := !td.KeepLastBatch
		e.Train.DropLast = &drop
	}
	if e.Train.TensorBoard == nil {
		on := true
		e.Train.TensorBoard = &on
	}
}

// HeadLRDefault says whether train.head_lr was left out, and if so by what the objective scaled train.lr
// to make it (1 for most objectives, 100 for DSE).
func (e *Experiment) HeadLRDefault() (scale float64, defaulted bool) {
	return e.headLRScale, e.headLRScale != 0
}

// WritesTensorBoard is whether the run writes a TensorBoard event file beside metrics.jsonl
// (train.tensorboard, true when left out).
func (e *Experiment) WritesTensorBoard() bool {
	return e.Train.TensorBoard == nil || *e.Train.TensorBoard
}

// KeepsLastBatch is whether each epoch ends with its last partial batch (train.drop_last false).
func (e *Experiment) KeepsLastBatch() bool { return e.Train.DropLast != nil && !*e.Train.DropLast }

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Load reads an experiment file strictly, applies the command line's --set overrides ("section.key=value",
// value in TOML syntax; a bare word is taken as a string) and resolves its paths from the file's folder.
func Load(path string, overrides []string) (*Experiment, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read experiment: %w", err)
	}
	e, err := decodeExperiment(path, src)
	if err != nil {
		return nil, err
	}
	for _, o := range overrides {
		if err := applyOverride(e, path, src, o); err != nil {
			return nil, err
		}
	}
	e.path = path
	e.defaults()
	if err := e.resolvePaths(path, shared.Dir); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := e.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

func decodeExperiment(path string, src []byte) (*Experiment, error) {
	var e Experiment
	md, err := toml.NewDecoder(bytes.NewReader(src)).Decode(&e)
	if err != nil {
		return nil, settings.DecodeError(path, err)
	}
	var unknown []string
	for _, k := range md.Undecoded() {
		if len(k) > 0 && k[0] == "objective" {
			continue // the objective reads its own table strictly
		}
		unknown = append(unknown, fmt.Sprintf("%s:%d: %s", path, settings.KeyLine(src, k), unknownKey(k)))
	}
	if len(unknown) > 0 {
		return nil, errors.New(strings.Join(unknown, "\n"))
	}
	return &e, nil
}

// applyOverride sets one section.key=value by decoding a one-key TOML document over the experiment, so the
// same strict rules (known key, right type) apply.
func applyOverride(e *Experiment, path string, src []byte, o string) error {
	key, value, ok := strings.Cut(o, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return fmt.Errorf("--set %q: want section.key=value", o)
	}
	value = strings.TrimSpace(value)
	if _, err := toml.Decode("v = "+value, &map[string]any{}); err != nil {
		value = fmt.Sprintf("%q", value) // a bare word is a string
	}
	parts := strings.Split(key, ".")
	doc := fmt.Sprintf("%s = %s\n", parts[len(parts)-1], value)
	if len(parts) > 1 {
		doc = fmt.Sprintf("[%s]\n%s", strings.Join(parts[:len(parts)-1], "."), doc)
	}
	md, err := toml.Decode(doc, e)
	if err != nil {
		return setError(o, value, err)
	}
	for _, k := range md.Undecoded() {
		if k[0] != "objective" {
			return fmt.Errorf("--set %s: %s", o, unknownKey(k))
		}
	}
	return nil
}
