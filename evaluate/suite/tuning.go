package suite

import (
	"fmt"
	"strings"

	"convrep/evaluate/finetune"
	"convrep/modelref"
	"convrep/models"
)

// Tuning is a fine-tuning task's training setting, resolved: the classifier's configuration, and whose
// defaults it took.
type Tuning struct {
	Config   finetune.Config
	Protocol string // whose defaults: finetune.PaperDSE, finetune.PaperFutureTOD, or "fixed" (a task no paper sets)
	Source   string // where the defaults came from, in words
}

// settings are the fine-tuning settings a result records.
func (t Tuning) settings() map[string]any {
	every := t.Config.EvalEvery
	if every == 0 {
		every = -1 // after every epoch, as --eval-every writes it
	}
	return map[string]any{"protocol": t.Protocol, "epochs": t.Config.Epochs, "batch_size": t.Config.BatchSize, "lr": t.Config.LR,
		"patience": t.Config.Patience, "eval_every": every, "dropout": t.Config.Dropout, "pooling": string(t.Config.Pooling),
		"max_length": t.Config.MaxLength, "defaults_from": t.Source}
}

// tuningFlags are the fine-tuning flags. Their defaults are a paper's protocol for the task (--protocol:
// DSE App. B.1 or FutureTOD App. B, finetune.Defaults); a flag given on the command line wins.
type tuningFlags struct {
	task, protocol                 string
	fixed                          *finetune.Protocol // a task no paper sets (the probes): these defaults, no --protocol
	epochs, batch, patience, every int
	lr, dropout                    float64
}

// tuningFlag declares the fine-tuning flags for task (finetune.TaskActs, TaskIntent, TaskResponse), their
// help naming each paper's default (with fixed, those defaults and no --protocol), and resolves them into dst
// once the command line has parsed.
func tuningFlag(f *Flags, c *Common, dst *Tuning, task string, fixed *finetune.Protocol) {
	t := &tuningFlags{}
	t.declare(f, task, fixed)
	f.Then(func(given func(string) bool) (err error) {
		*dst, err = t.resolve(given, c)
		return err
	})
}

func (t *tuningFlags) declare(f *Flags, task string, fixed *finetune.Protocol) {
	t.task, t.fixed = task, fixed
	byPaper := func(v func(finetune.Protocol) any) string {
		if fixed != nil {
			return fmt.Sprint(v(*fixed))
		}
		var parts []string
		for _, paper := range finetune.Papers() {
			p, _ := finetune.Defaults(paper, task)
			parts = append(parts, fmt.Sprintf("%s %v", paper, v(p)))
		}
		return "the --protocol's: " + strings.Join(parts, ", ")
	}
	if fixed == nil {
		f.StringVar(&t.protocol, "protocol", finetune.PaperDSE, "whose fine-tuning setting gives the defaults: dse (DSE App. B.1) or futuretod (FutureTOD App. B, §3.2, and TOD-BERT's code where it is silent)")
	}
	f.IntVar(&t.epochs, "epochs", 0, "fine-tuning epochs (early stopping may end sooner); default "+byPaper(func(p finetune.Protocol) any { return p.Epochs }))
	f.IntVar(&t.batch, "ft-batch-size", 0, "fine-tuning batch size; default "+byPaper(func(p finetune.Protocol) any { return p.BatchSize }))
	f.IntVar(&t.every, "eval-every", 0, "optimiser steps between validations, -1 = after every epoch; default "+byPaper(func(p finetune.Protocol) any { return p.EvalEvery }))
	f.IntVar(&t.patience, "patience", 0, "validations in a row without a better score tolerated before stopping (negative: never); default "+byPaper(func(p finetune.Protocol) any { return p.Patience }))
	f.Float64Var(&t.lr, "lr", 0, "learning rate (AdamW); default "+byPaper(func(p finetune.Protocol) any { return p.LR }))
	f.Float64Var(&t.dropout, "dropout", -1, "dropout on the pooled representation before the classifier, in training; default "+byPaper(func(p finetune.Protocol) any { return p.Dropout }))
}

// resolve fills in, from the protocol, every fine-tuning flag not given on the command line, and
// --max-length and --pooling (the model folder's declared pooling, else mean, where the protocol names
// none), in c too.
func (t *tuningFlags) resolve(given func(string) bool, c *Common) (Tuning, error) {
	p, protocol := finetune.Protocol{}, t.protocol
	if t.fixed != nil {
		p, protocol = *t.fixed, "fixed"
	} else {
		var err error
		if p, err = finetune.Defaults(t.protocol, t.task); err != nil {
			return Tuning{}, fmt.Errorf("--protocol: %w", err)
		}
	}
	pick := func(name string, v *int, def int) {
		if !given(name) || (name == "max-length" && *v == -1) {
			*v = def
		}
	}
	pick("epochs", &t.epochs, p.Epochs)
	pick("ft-batch-size", &t.batch, p.BatchSize)
	pick("eval-every", &t.every, p.EvalEvery)
	pick("patience", &t.patience, p.Patience)
	pick("max-length", &c.Model.MaxLength, p.MaxLength)
	if !given("lr") {
		t.lr = p.LR
	}
	if !given("dropout") {
		t.dropout = p.Dropout
	}
	pooling := models.Pooling(c.Model.Pooling)
	if !given("pooling") || c.Model.Pooling == "" {
		pooling = p.Pooling
		if pooling == "" {
			pooling = modelref.Pooling(c.Model.Ref)
		}
	}
	pooling, err := models.ParsePooling(string(pooling))
	if err != nil {
		return Tuning{}, fmt.Errorf("--pooling: %w", err)
	}
	c.Model.Pooling = string(pooling)
	switch {
	case t.epochs < 1, t.batch < 1, t.lr <= 0, t.dropout < 0, t.dropout >= 1, t.every == 0 || t.every < -1, c.Model.MaxLength < 0:
		return Tuning{}, fmt.Errorf("fine-tuning settings: --epochs %d, --ft-batch-size %d, --lr %g, --dropout %g, --eval-every %d, --max-length %d: "+
			"want epochs, batch size and lr above 0, dropout in [0, 1), eval-every above 0 or -1, max length 0 (the model's limit) or more",
			t.epochs, t.batch, t.lr, t.dropout, t.every, c.Model.MaxLength)
	}
	every := t.every
	if every < 0 {
		every = 0 // finetune.Config: after every epoch
	}
	return Tuning{Protocol: protocol, Source: p.Source, Config: finetune.Config{Epochs: t.epochs, BatchSize: t.batch, LR: t.lr, Patience: t.patience,
		EvalEvery: every, Dropout: t.dropout, Pooling: pooling, MaxLength: c.Model.MaxLength}}, nil
}
