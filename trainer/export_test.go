package trainer

import (
	"github.com/sugarme/gotch/ts"

	"convrep/checkpoint"
	"convrep/experiment"
	"convrep/objectives"
	"convrep/trainer/optim"
)

// The trainer's end-to-end tests are package trainer_test, so that they train through trainer/trainertest
// (which builds a trainer as cmd/train does); this file lends them the internals they look into or stand in
// for. Only the test binary sees it.

// What a run writes and how it is read back.
var (
	ReadMetrics   = readMetrics
	MetricScalars = metricScalars
	CopyFile      = copyFile
	CopyFiles     = copyFiles
)

// The run folder's validation files.
const (
	ValidFile  = validFile
	BestDir    = bestDir
	BestRecord = bestRecord
)

// Best is the record beside the best model.
type Best = best

// The steps of New that the tests take one at a time.
var (
	JoinCluster = joinCluster
	OptimGroups = optimGroups
	CorpusFiles = corpusFiles
	DataEnv     = dataEnv
)

// The seams a test replaces: the CUDA graph's maker, its warm-up steps, and the fsync of metrics.jsonl.
var (
	NewStepGraph = &newStepGraph
	GraphWarmup  = &graphWarmup
	Fsync        = &fsync
)

// Objective is the objective the trainer trains.
func (t *Trainer) Objective() objectives.Objective { return t.obj }

// Backbone is the encoder and its tokenizer.
func (t *Trainer) Backbone() *experiment.Backbone { return t.bb }

// Groups are the optimiser's parameter groups.
func (t *Trainer) Groups() []optim.Group { return t.groups }

// Params are the trainable tensors by name.
func (t *Trainer) Params() map[string]*ts.Tensor { return t.params }

// Position is where the run stands: the step, epoch and batch it will take next.
func (t *Trainer) Position() checkpoint.Position { return t.pos }

// Rank is this process's rank among the data-parallel ranks.
func (t *Trainer) Rank() int { return t.cl.rank() }

// CloseCluster leaves the ranks' process group, for a trainer built and not run.
func (t *Trainer) CloseCluster() { t.cl.close() }
