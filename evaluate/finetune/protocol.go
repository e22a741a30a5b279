package finetune

import (
	"fmt"
	"slices"
	"strings"

	"convrep/models"
)

// Protocol is one paper's fine-tuning setting for one task: the defaults cmd/evaluate gives its flags.
type Protocol struct {
	Epochs, BatchSize int
	LR                float64
	EvalEvery         int // optimiser steps between validations
	Patience          int // validations without a better score tolerated (TOD-BERT main.py: stop when above)
	MaxLength         int // tokens; 0 = the model's limit
	Dropout           float64
	Pooling           models.Pooling // "" = what the model folder declares, else mean (DSE's)
	Source            string         // where each value comes from
}

// The papers whose fine-tuning protocols Defaults knows, and the tasks.
const (
	PaperDSE       = "dse"
	PaperFutureTOD = "futuretod"

	TaskActs     = "acts"     // dialogue act prediction, multi-label
	TaskIntent   = "intent"   // intent classification, softmax
	TaskResponse = "response" // response selection, a dual encoder
)

// futureTOD is FutureTOD App. B's setting, common to its tasks but the batch size: "50 epochs with an
// early-stopped strategy evaluated on the validation set every 50 steps with patience set to 10"; the [CLS]
// representation (§3.2). What App. B leaves open comes from TOD-BERT, whose protocol FutureTOD follows
// (§3.2 "Following Wu et al. (2020)"; github jasonwu0731/ToD-BERT): the learning rate its
// evaluation_pipeline.sh passes (5e-5; FutureTOD grid-searches {2e-5 … 2e-4} and reports no choice), no
// --max_seq_length there so utils/config.py's 512 (the model's limit), and no dropout on the pooled output
// (models/multi_label_classifier.py and multi_class_classifier.py put the linear layer straight on it).
func futureTOD(batch int, task string) Protocol {
	return Protocol{Epochs: 50, BatchSize: batch, LR: 5e-5, EvalEvery: 50, Patience: 10, MaxLength: 0, Dropout: 0, Pooling: models.CLS,
		Source: fmt.Sprintf("FutureTOD App. B (50 epochs, validation every 50 steps, patience 10, batch %d for %s), §3.2 ([CLS]); "+
			"TOD-BERT evaluation_pipeline.sh (lr 5e-5), utils/config.py (max_seq_length 512 = the model's limit), "+
			"models/multi_*_classifier.py (no classifier dropout)", batch, task)}
}

// protocols are the papers' settings. DSE App. B.1 gives no patience ("Early stopping is applied based on
// the model's validation results"): 10 validations, as FutureTOD's.
var protocols = map[[2]string]Protocol{
	{PaperDSE, TaskActs}: {Epochs: 100, BatchSize: 32, LR: 5e-5, EvalEvery: 30, Patience: 10, MaxLength: 32, Dropout: 0.2,
		Source: "DSE App. B.1, Dialogue Action Prediction (100 epochs, batch 32, lr 5e-5, validation every 30 steps, max length 32 " +
			"truncated from the head, classifier dropout 0.2); patience 10 ours"},
	{PaperDSE, TaskIntent}: {Epochs: 50, BatchSize: 16, LR: 3e-5, EvalEvery: 10, Patience: 10, MaxLength: 64, Dropout: 0.1,
		Source: "DSE App. B.1, Intent Classification (50 epochs, batch 16, lr 3e-5, validation every 10 steps, max length 64, " +
			"classifier dropout 0.1); patience 10 ours"},
	{PaperDSE, TaskResponse}: {Epochs: 50, BatchSize: 100, LR: 3e-5, EvalEvery: 10, Patience: 10, MaxLength: 128, Dropout: 0,
		Source: "DSE App. B.1, Utterance-level Response Selection (max length 128, batch 100; the rest as Intent Classification: " +
			"50 epochs, lr 3e-5, validation every 10 steps); no classification layer, so no dropout; patience 10 ours"},
	{PaperFutureTOD, TaskActs}:     futureTOD(16, "dialogue act prediction"),
	{PaperFutureTOD, TaskIntent}:   futureTOD(8, "intent recognition"),
	{PaperFutureTOD, TaskResponse}: futureTOD(100, "response selection"),
}

// Papers lists the papers Defaults knows.
func Papers() []string { return []string{PaperDSE, PaperFutureTOD} }

// Defaults returns paper's fine-tuning protocol for task.
func Defaults(paper, task string) (Protocol, error) {
	p, ok := protocols[[2]string{paper, task}]
	if !ok {
		if !slices.Contains(Papers(), paper) {
			return p, fmt.Errorf("fine-tuning protocol %q: unknown (known: %s)", paper, strings.Join(Papers(), ", "))
		}
		return p, fmt.Errorf("fine-tuning protocol %q has no task %q", paper, task)
	}
	return p, nil
}
