// Package objectives is the contract between the trainer and the pretraining objectives, and what every objective is
// given: its settings, the run's data (DataEnv) and the held-out split. Each objective is one package below this one
// (dse, futuretod, dialoguecse, mgt, and the baselines mlm, simcse and rcl), which starts from its paper's equations
// and declares everything a run needs of it: its name, its settings (read once and strictly), what it needs of the
// backbone, its parameter groups with the learning rate each uses, its dataset and its loss. objectives/all imports
// every one of them.
//
// This file is the whole contract: the two interfaces every objective implements (Config, Objective, with the
// Dataset its Objective builds), and every optional interface the trainer, `convrep data prepare` or the
// evaluation asks for, each saying when it is called. The trainer knows objectives only through these interfaces:
// it parses the [objective] table with Parse (register.go), builds the backbone the Config needs, builds the
// objective on it, asks it for its groups and its dataset, and calls Loss per batch. The pieces objectives share in
// their code are packages of their own: objectives/inputs and objectives/tensors.
//
// Adding an objective is one package that calls Register from an init function, and a line in objectives/all
// (docs/objectives.md, "Adding an objective", shows the whole of toy_test.go's example).
package objectives

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/models"
)

// The required interfaces.

// Config is an objective whose settings have been read. Needs says what it needs of the backbone, before the
// backbone exists; Build makes the objective on the backbone m, adding its own parameters (a projection
// head, a second encoder) to m.VS before the trainer builds the optimiser.
type Config interface {
	Needs() Requirements
	Build(m *models.Model) (Objective, error)
}

// Objective is an objective built on its model.
type Objective interface {
	// Name is the name the objective was registered under.
	Name() string
	// Groups are the optimiser's parameter groups (see Group): every trainable tensor of the model's VarStore
	// in exactly one, in the order the optimiser and the gradient clipping visit them.
	Groups() []Group
	// Dataset builds the training examples from the run's data.
	Dataset(env DataEnv) (Dataset, error)
	// Loss computes the loss of one batch (the Value of a Batch its Dataset made) as a scalar tensor that
	// still holds its graph; the trainer runs backward and the optimiser step and drops the loss. train
	// turns dropout on. Under mixed precision the loss is computed in fp32 (see tensors.Upcast and tensors.FP32). metrics
	// are extra numbers worth logging (may be nil), each a detached 0-dim tensor on the device, never read
	// back here (see Metric); the caller drops them (DropMetrics).
	Loss(batch any, train bool) (loss *ts.Tensor, metrics map[string]*ts.Tensor, err error)
}

// Dataset gives the trainer batches of an objective's own type.
type Dataset interface {
	// Len is the number of examples.
	Len() int
	// Batch builds the batch of the examples at idx, on dev; Drop frees its tensors.
	Batch(idx []int, dev gotch.Device) (Batch, error)
}

// Batch is one objective batch (Value is what the objective's Loss reads).
type Batch struct {
	Value any
	Drop  func()
}

// The optional interfaces. An objective that needs none of them (DSE) implements none; the trainer checks for
// each with a type assertion, at the moment its comment names.

// Dataset and Batch side.

// Static is a batch value that a CUDA graph can replay (train.cuda_graphs): Tensors lists its tensors in a
// fixed order, and a batch of the same shapes lists tensors of those shapes in that order, so that copying
// another batch's tensors into this one's is the same as taking the other batch. A dataset whose batches are
// Static pads them to fixed widths when DataEnv.FixedShapes is set, so that full batches share one shape. With
// train.cuda_graphs, the trainer asks each step's batch for its tensors, to capture them once and copy every
// later batch into them.
type Static interface {
	Tensors() []*ts.Tensor
}

// Reporter is a Dataset that says what building it cost (MGT: each phase's seconds, the caches it hit, its
// segments' similarity, the memory its pool and negatives take): `convrep data prepare` calls Report, whose
// value marshals to a JSON object, and prints it; the trainer never does.
type Reporter interface {
	Report() any
}

// EpochAware is a Dataset whose batches depend on the epoch as well as on the example indices, such as a
// masked-LM dataset that re-masks every example each epoch (dynamic masking) from a random source derived
// from (seed, epoch, example): the trainer tells it the epoch before asking for that epoch's batches, so a
// resumed run builds exactly the batches the first run would have.
type EpochAware interface {
	SetEpoch(epoch int)
}

// Objective side.

// GlobalBatch is implemented by the objectives whose negatives are the other rows of the batch. With several
// ranks the trainer hands them its Gather once, after Build, and each rank computes the loss over the global
// batch, as the papers' multi-GPU runs do: more negatives, and the same loss as one process holding the whole
// batch.
type GlobalBatch interface {
	SetGather(g Gather)
}

// Gather stacks every data-parallel rank's rows of x in rank order; gradients flow back to this rank's own
// rows. The trainer provides it; with one process it returns x.
type Gather func(x *ts.Tensor) (*ts.Tensor, error)

// AfterStepper is an objective that acts after each optimiser step, once the weights have changed (FutureTOD
// copies the student into its teacher every E epochs or steps). The trainer calls it before it logs and
// checkpoints the step, so a checkpoint holds the state the hook left.
type AfterStepper interface {
	AfterStep(p Progress) error
}

// Progress is where training stands when a hook runs.
type Progress struct {
	Step       int64 // optimiser steps done, the one just made included
	Epoch      int   // the epoch the step belonged to, counted from 0
	EndOfEpoch bool  // the step was the last of its epoch
}

// Stateful is an objective holding tensors of its own that are not trained by the optimiser but that a
// resumed run needs to continue exactly (FutureTOD's teacher). State returns the live tensors by name; the
// trainer saves their values in each checkpoint and, on resume, copies the stored values back into the same
// tensors in place (names, shapes and dtypes must match).
type Stateful interface {
	State() map[string]*ts.Tensor
}

// Embedder is an objective that says how its encoder turns a text into one vector: the pooling it trains and
// is evaluated with, and whether the vectors are L2-normalised (as cosine-based evaluation does). The trainer
// writes it into the saved model (sentence-transformers' Pooling and Normalize modules). An objective that
// does not implement it embeds as the similarity suite does: mean pooling, normalised.
type Embedder interface {
	Embedding() (pooling models.Pooling, normalize bool)
}

// Validator is an objective whose held-out measure is not its training loss: an MLM-based one reports the
// perplexity, exp of the mean negative log-likelihood of the masked tokens (FutureTOD §3.1 stops early on it).
// ValidationLoss gives one batch's summed NLL (a detached 0-dim tensor on the device, never read back here) and the
// number of tokens it sums; the trainer runs it at each evaluation step (train.eval_every), in eval mode under
// no-grad, and the batches come from a dataset that keeps its masks from one evaluation to the next. An objective
// without it is validated by the mean of Loss(batch, false) over the batches.
type Validator interface {
	ValidationLoss(batch any) (sum *ts.Tensor, count int64, err error)
}

// Config side.

// TrainDefaults are the values an objective gives [train] keys that an experiment file leaves out, where its
// authors' code differs from convrep's general defaults. The experiment applies them when it is loaded
// (experiment.Load); a key the file sets wins.
type TrainDefaults struct {
	// HeadLRScale makes train.head_lr, when unset, train.lr × HeadLRScale (DSE's lr_scale); 0 means 1, the
	// encoder's rate.
	HeadLRScale float64
	// KeepLastBatch keeps each epoch's last partial batch when train.drop_last is unset, as torch's
	// DataLoader does with drop_last=False; false drops it.
	KeepLastBatch bool
}

// TrainDefaulter is a Config whose objective has TrainDefaults of its own.
type TrainDefaulter interface {
	TrainDefaults() TrainDefaults
}

// Evaluation side: asked by the evaluation, never by the trainer.

// Evaluation is what evaluation asks of an objective about the models it trains, so that neither package
// evaluate nor the evaluate command imports an objective's package: the second encoder a checkpoint holds,
// the head it holds, and the ensemble the objective's paper defines. An objective that has any of them
// registers its Evaluation with RegisterEvaluation from its init function, beside Register; evaluation finds
// it through the registry (convrep/objectives/all fills it). A method the objective has nothing for returns
// nil and no error.
type Evaluation interface {
	// ResponseEncoder builds an encoder of configuration cfg on dev holding the response encoder the
	// checkpoint at path holds beside the backbone (MGT §3.1's f_r), or nil when it holds none. Response
	// selection embeds its candidates with it and scores them by the dot product with the context (MGT Eq. 4).
	ResponseEncoder(cfg *models.Config, path string, dev gotch.Device) (*models.Model, error)
	// Head reads the projection head the checkpoint at path holds under name (DSE's contrastive head, §3.1),
	// or nil when the objective writes no head; it fails when the checkpoint lacks a head of that name.
	Head(path, name string) (Head, error)
	// Ensemble combines the members' scores of each query's candidates, [member][query][candidate], into one
	// score per candidate, [query][candidate], as the objective's paper defines an ensemble (MGT §3.2, Eq. 7),
	// or nil when it defines none.
	Ensemble(scores [][][]float64) ([][]float64, error)
}

// TextEncoder embeds texts, one vector each (evaluate.Encoder).
type TextEncoder interface {
	Embed(texts []string) ([][]float32, error)
}

// Head is a trained head read from a checkpoint: Over maps enc's embeddings through it.
type Head interface {
	Over(enc TextEncoder) TextEncoder
}
