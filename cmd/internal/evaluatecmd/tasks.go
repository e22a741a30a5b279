package evaluatecmd

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/evaluate/suite"
	"convrep/evaluate/tsne"
	"convrep/modelref"
	"convrep/models"
)

func runReport(ctx context.Context, args []string, _ *zap.Logger) error {
	fs := newFlags("report", "[--output table.md] RESULT.json|DIR ...",
		"Lays the results of several models side by side, one table per task like the papers' tables: a row per model, a\n"+
			"column per dataset, variant and metric, cells mean ± std over seeds in percent. A folder stands for its suite.json,\n"+
			"or for every result file in it.")
	output := fs.String("output", "", "write the Markdown here (default stdout)")
	dirs, err := parse(ctx, fs, args)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return fmt.Errorf("name at least one result file or folder (see --help)")
	}
	return suite.Report(*output, dirs)
}

// The tasks: each parses its flags and calls the library (package suite) with them.

func runIntent(ctx context.Context, args []string, log *zap.Logger) error {
	var c suite.Common
	fs := newFlags("intent", "--model M (--dataset clinc150|snips | --train F --test F) [flags]",
		"Few-shot intent classification with prototypical networks (DSE §4.2): per label, a k-shot support set is drawn\n"+
			"from the training split (min(2k, n) rows drawn with the seed, a train and a validation half as DSE draws them, the\n"+
			"first k kept); a query goes to the prototype (mean of normalised support embeddings) with the largest dot product.\n"+
			"Accuracy, mean and std over seeds. A label with fewer than k rows keeps all it has: the run warns, naming such\n"+
			"labels, and each row's settings record shots_used; a k that no label can fill is refused.")
	register(fs, &c, 64) // DSE App. B.1: 64 for intent classification
	registerHead(fs, &c)
	shots := fs.String("shots", "1,5", "shots per label, a list")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	return suite.Intent(ctx, &c, *shots, log)
}

func runOOS(ctx context.Context, args []string, log *zap.Logger) error {
	var c suite.Common
	fs := newFlags("oos", "--model M [--dataset clinc150 | --train F --test F] [--oos-protocol authors|paper] [flags]",
		"Out-of-scope detection (DSE §4.2, Tables 3 and 8). --oos-protocol authors (the default: the authors' code,\n"+
			"amazon-research/dse evaluate/run_similarity.py eval_out_of_scope_detection, which made the published numbers):\n"+
			"k out-of-scope training examples form a 151st prototype; each query's similarities to the prototypes are\n"+
			"L2-normalised before the maximum; thresholds mean−std, mean, mean+std of those maxima over the test queries;\n"+
			"a query whose maximum is not above the threshold is out-of-scope. --oos-protocol paper (the paper's text):\n"+
			"in-scope prototypes as for intent; thresholds mean and mean−std of the raw best similarities; a query below\n"+
			"the threshold is out-of-scope. Accuracy, In-Accuracy, OOS-Accuracy, OOS-Recall.")
	register(fs, &c, 64) // DSE App. B.1: 64 for out-of-scope detection
	registerHead(fs, &c)
	shots := fs.String("shots", "1,5", "shots per label, a list")
	protocol := fs.String("oos-protocol", evaluate.OOSAuthors, "authors (the DSE authors' code) or paper (the paper's text); see --help")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	return suite.OOS(ctx, &c, *shots, *protocol, log)
}

func runResponse(ctx context.Context, args []string, log *zap.Logger) error {
	var c suite.Common
	fs := newFlags("response", "--model M (--dataset amazonqa|ubuntu|multiwoz | --test F) [flags]",
		"Response selection without training (DSE §4.2): each query (a question, or a dialogue history joined with the\n"+
			"separator token and truncated from the head) ranks its true response among --candidates by cosine similarity.\n"+
			"Top-1, Top-3, Top-10, MRR; ties rank the truth last among equals. An ensemble (MGT §3.2, Eq. 7): --model a,b,c\n"+
			"(with --checkpoint x,y,z paired, or none), or --model exp.toml --checkpoint x,y,z (checkpoints of one run); each\n"+
			"member's softmax over a query's candidates of its scores, averaged over the members, ranks the candidates. An MGT\n"+
			"dual encoder (a run folder of objective mgt, or its experiment with --checkpoint) embeds candidates with its\n"+
			"response encoder and scores them by the dot product cᵀr (MGT Eq. 4) instead of the cosine.")
	register(fs, &c, 128) // DSE App. B.1: 128 for response selection
	registerHead(fs, &c)
	size := fs.Int("candidates", 100, "candidates per query, the true response included")
	name := fs.String("name", "", "the model's name in the result rows and tables (default: --model, or the ensemble's members)")
	fs.Uint64Var(&c.Data.SplitSeed, "split-seed", 1, "seed choosing each Ubuntu IRC conversation's split point (the test set itself)")
	fs.StringVar(&c.Data.Split, "split", "test", "the dataset's split: test, or val (MultiWOZ 2.1's validation dialogues, for choosing checkpoints: see evaluate select); recorded in the rows")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	return suite.Response(ctx, &c, *size, *name, log)
}

func runSR(ctx context.Context, args []string, log *zap.Logger) error {
	var c suite.Common
	fs := newFlags("sr", "--model M [--dataset msr_e2e] [--data-root DIR] [--queries 2000] [--seeds 0-2] [flags]",
		"Semantic retrieval (DialogueCSE §5.1.2, Table 2's MAP and MRR) on MSR-E2E (the paper's MDC). The candidates are the\n"+
			"distinct user messages of at least 3 words; a message's intent label is its dialogue acts' names with their slot\n"+
			"names, values dropped (request(date;moviename)+greeting(greeting)); texts whose copies disagree on the label are\n"+
			"dropped. Per seed, --queries of them are drawn; BM25 (k1 = 1.2, b = 0.75) retrieves each query's 100 candidates from\n"+
			"the others, positive when their label is the query's, at most 30 positive (later positives passed over); queries\n"+
			"with no positive are dropped and counted. The model re-ranks each list by the cosine of its sentence embeddings\n"+
			"(as the other similarity tasks: --pooling, L2-normalised). MAP and MRR over the queries, mean and std over seeds.\n"+
			"The paper also discards candidates annotators judged inconsistent with their label; no such judgement exists here.")
	register(fs, &c, 64) // single utterances, as intent (DSE App. B.1); 64 tokens hold over 99% of MSR-E2E's user messages
	registerHead(fs, &c)
	if err := setDefault(fs, "seeds", "0-2"); err != nil {
		return err
	}
	fs.Lookup("data-root").Usage = "folder of the pretraining corpora, holding msr_e2e/ (default: data/pretrain in the shared folder, $CONVREP_SHARED or else ../shared from the working directory)"
	queries := fs.Int("queries", evaluate.DefaultSRSampling.Queries, "queries drawn per seed (all of the pool when it holds fewer)")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	return suite.SR(ctx, &c, *queries, log)
}

func runSelect(ctx context.Context, args []string, log *zap.Logger) error {
	var c suite.Common
	fs := newFlags("select", "--model EXP.toml|RUN --checkpoints RUN|DIR|A,B,... (--dataset multiwoz | --val F) --top N --output chosen.json [flags]",
		"Chooses checkpoints on validation data, as MGT §4.2 does: \"the highest performing checkpoint at each granularity is\n"+
			"selected using the validation score. For the ensemble method, the top performing checkpoints are selected from a\n"+
			"single run.\" Each checkpoint alone ranks 1 of --candidates on MultiWOZ 2.1's validation dialogues (as evaluate\n"+
			"response, an MGT checkpoint by cᵀr with both its encoders); checkpoints are ranked by --metric, mean over --seeds,\n"+
			"ties going to the earlier step. Writes the ranked list and the --top best as JSON, and the chosen paths as one\n"+
			"comma-separated line (for evaluate response --checkpoint) beside it (.txt) and on stdout. Never reads a test split.")
	register(fs, &c, 128) // DSE App. B.1: 128 for response selection
	ckpts := fs.String("checkpoints", "", "the checkpoints to choose from: a run folder (its checkpoints/), a folder of step-N.safetensors files, or a comma-separated list of them (required)")
	val := fs.String("val", "", "a CSV or JSON lines file of validation queries and responses, instead of --dataset")
	split := fs.String("split", "val", "the dataset's split to choose on: only val (choosing on test would report a test score that chose itself)")
	size := fs.Int("candidates", 100, "candidates per query, the true response included")
	top := fs.Int("top", 1, "how many checkpoints to choose (MGT: 1 per granularity; 5 for the Ensemble (5) baseline)")
	metric := fs.String("metric", "top1", "what ranks the checkpoints: top1 or mrr")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	return suite.Select(ctx, &c, *ckpts, *val, *split, *size, *top, *metric, log)
}

func runSuite(ctx context.Context, args []string, log *zap.Logger) error {
	var c suite.Common
	fs := newFlags("suite", "--model M --output-dir DIR [flags]",
		"Runs every similarity-based task of the papers' tables with one model, sharing its embeddings: "+strings.Join(suite.Tasks, ", ")+".\n"+
			"Writes DIR/TASK-DATASET.json and .md per task, and DIR/suite.json and DIR/suite.md with every row and the wall time;\n"+
			"and each row's mean as a TensorBoard scalar eval/TASK/DATASET/VARIANT/METRIC at the model's training step\n"+
			"(its checkpoint's, or its model card's; 0 when unknown) in DIR's event file, beside the other steps' there.")
	register(fs, &c, suite.PerTaskLength)
	registerHead(fs, &c)
	shots := fs.String("shots", "1,5", "shots per label for intent and oos")
	size := fs.Int("candidates", 100, "candidates per response-selection query")
	outDir := fs.String("output-dir", "", "folder for the results (required)")
	protocol := fs.String("oos-protocol", evaluate.OOSAuthors, "out-of-scope protocol: authors (the DSE authors' code) or paper (the paper's text); see evaluate oos --help")
	only := fs.String("tasks", strings.Join(suite.Tasks, ","), "the tasks to run, a list of TASK:DATASET")
	fs.Uint64Var(&c.Data.SplitSeed, "split-seed", 1, "seed choosing each Ubuntu IRC conversation's split point")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	return suite.Suite(ctx, &c, *shots, *size, *outDir, *protocol, *only, log)
}

func runActs(ctx context.Context, args []string, log *zap.Logger) error {
	var c suite.Common
	var f ftFlags
	fs := newFlags("acts", "--model M --dataset dstc2|gsim|multiwoz [--shots 10,20 | --fractions 0.01,0.1,1] [--protocol dse|futuretod] [flags]",
		"Dialogue act prediction by fine-tuning (DSE Appendix B, FutureTOD §3.2): multi-label, binary cross-entropy, micro\n"+
			"and macro F1 on the test split. Each input is built as TOD-BERT builds it (utils/dataloader_dm.py): the history, the\n"+
			"system turn whose acts are predicted and the user turn answering it, with [SYS]/[USR] role tokens for a model whose\n"+
			"tokenizer has them, else joined with its separator; truncated from the head. --protocol sets the defaults.\n"+
			"--shots n draws up to n examples per act from the training split (and a validation set from what is left);\n"+
			"--fractions takes that share of the training examples (MultiWOZ: 1%, 10%, all). One fresh model per run.")
	register(fs, &c, -1)
	f.register(fs, finetune.TaskActs, nil)
	shots := fs.String("shots", "", "few-shot sizes, examples per act (DSTC2, GSIM: 10,20)")
	fractions := fs.String("fractions", "", "shares of the training data (MultiWOZ: 0.01,0.1,1)")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	cfg, source, err := f.resolve(fs, &c)
	if err != nil {
		return err
	}
	return suite.Acts(ctx, &c, cfg, f.settings(&c, source), *shots, *fractions, log)
}

func runFinetuneIntent(ctx context.Context, args []string, log *zap.Logger) error {
	var c suite.Common
	var f ftFlags
	fs := newFlags("finetune-intent", "--model M [--dataset clinc150|snips | --train F --test F] [--shots 1,5] [--full] [flags]",
		"Intent classification by fine-tuning a softmax classifier on the pooled representation (FutureTOD §3.2, Table 1;\n"+
			"DSE App. B.1); --protocol dse|futuretod sets the defaults (pooling, dropout, batch size, epochs, validation steps).\n"+
			"On CLINC150 out-of-scope is a 151st class (as TOD-BERT and FutureTOD): k-shot runs draw k examples per intent\n"+
			"(oos included) from the training split with the seed; --full trains on all of it. Reports Acc(all), Acc(in),\n"+
			"Acc(out) (in/out decision) and Recall(out); early stopping on the validation split when the data have one.")
	register(fs, &c, -1)
	f.register(fs, finetune.TaskIntent, nil)
	shots := fs.String("shots", "1,5", "shots per intent, a list (empty: none)")
	full := fs.Bool("full", false, "also train on the whole training split (one run per seed)")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	cfg, defaults, err := f.resolve(fs, &c)
	if err != nil {
		return err
	}
	return suite.FinetuneIntent(ctx, &c, cfg, f.settings(&c, defaults), *shots, *full, log)
}

func runFinetuneResponse(ctx context.Context, args []string, log *zap.Logger) error {
	var c suite.Common
	var f ftFlags
	fs := newFlags("finetune-response", "--model M (--dataset ubuntu|multiwoz | --train F --test F) [flags]",
		"Response selection after fine-tuning a dual encoder (one shared encoder, in-batch negatives, softmax over cosines /\n"+
			"temperature) on the dataset's training pairs; then, as the similarity-based task, each test query ranks its\n"+
			"response among --candidates (MGT's next-utterance retrieval: 20 candidates, MRR and Hits@1 = Top-1; R10@1 and R2@1\n"+
			"with --candidates 10 or 2). One fresh model per seed; the seed also draws the candidates. --protocol dse|futuretod\n"+
			"sets the defaults (DSE App. B.1: batch 100, max length 128; FutureTOD App. B: batch 100, [CLS]); early stopping\n"+
			"on the in-batch loss of a fixed held-out tenth of the training pairs.")
	register(fs, &c, -1)
	f.register(fs, finetune.TaskResponse, nil)
	size := fs.Int("candidates", 100, "candidates per test query, the true response included")
	temperature := fs.Float64("temperature", 0.05, "softmax temperature of the in-batch loss")
	fs.Uint64Var(&c.Data.SplitSeed, "split-seed", 1, "seed choosing each Ubuntu IRC conversation's split point")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	cfg0, defaults, err := f.resolve(fs, &c)
	if err != nil {
		return err
	}
	return suite.FinetuneResponse(ctx, &c, cfg0, f.settings(&c, defaults), *size, *temperature, log)
}

func runProbe(ctx context.Context, args []string, log *zap.Logger) error {
	var c suite.Common
	var f ftFlags
	fs := newFlags("probe", "--model M --probe bow|acts [--dataset multiwoz] [flags]",
		"Linear probes on frozen representations (MGT §5.2-5.3): the encoder embeds each MultiWOZ dialogue context (the\n"+
			"turns before a system response) once, and only a linear layer trains. bow predicts the words of the context's\n"+
			"last utterance; acts predicts the dialogue acts of the next system response. Micro and macro F1 on the test split.")
	register(fs, &c, -1)
	f.register(fs, "probe", &suite.ProbeProtocol)
	probe := fs.String("probe", "bow", "bow or acts")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	cfg, defaults, err := f.resolve(fs, &c)
	if err != nil {
		return err
	}
	return suite.Probe(ctx, &c, cfg, f.settings(&c, defaults), *probe, log)
}

func runTSNE(ctx context.Context, args []string, log *zap.Logger) error {
	var c suite.Common
	fs := newFlags("tsne", "--model M --output FIG.png [flags]",
		"A t-SNE of the model's embeddings of CLINC150's test queries, coloured by intent, out-of-scope queries in black\n"+
			"(the papers' Figure 1). Barnes-Hut t-SNE after PCA to 50 dimensions; the same seed gives the same picture.")
	register(fs, &c, 0)
	seed := fs.Uint64("seed", 0, "t-SNE seed")
	perplexity := fs.Float64("perplexity", tsne.DefaultPerplexity, "t-SNE perplexity")
	iterations := fs.Int("iterations", tsne.DefaultIterations, "t-SNE iterations")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	return suite.TSNE(ctx, &c, *seed, *perplexity, *iterations, log)
}

// registerHead adds --head, for the similarity-based tasks (fine-tuning trains a head of its own).
func registerHead(fs *flag.FlagSet, c *suite.Common) {
	fs.StringVar(&c.Model.Head, "head", "", "with --checkpoint: embed through the contrastive head the checkpoint holds under this name after pooling (DSE's: contrast_head), instead of the pooled encoder alone")
}

// register adds the flags; maxLength is the task's default --max-length (0: the model's limit; -1: a
// fine-tuning task's --protocol sets it).
func register(fs *flag.FlagSet, c *suite.Common, maxLength int) {
	fs.StringVar(&c.Model.Ref, "model", "", "model to evaluate: a convrep run folder, a model folder, a hub name, or an experiment .toml (its untrained backbone) (required); for response, a comma-separated list evaluates their ensemble (MGT Eq. 7)")
	fs.StringVar(&c.Model.Checkpoint, "checkpoint", "", "with an experiment .toml as --model: evaluate the weights of this checkpoint of its run (runs/X/checkpoints/step-N.safetensors); for response, a comma-separated list evaluates the ensemble of those checkpoints (one experiment file) or pairs with the --model list")
	fs.StringVar(&c.Model.Device, "device", "cpu", "cpu, cuda or cuda:N")
	fs.StringVar(&c.Model.Pooling, "pooling", "", "sentence embedding: mean (masked mean of the last layer, as DSE) or cls (default: what the model folder declares, else mean)")
	fs.IntVar(&c.Model.MaxLength, "max-length", maxLength, "longest input in tokens; 0 = the max_seq_length the model folder declares for sentence-transformers, else the model's limit (dialogue histories keep their latest turns). "+
		"Defaults as DSE App. B.1: intent and oos 64, response 128 (\"a number that can fit at least 99% of the samples\"); "+
		"-1 = each task's: in suite the single tasks' lengths, in fine-tuning tasks the --protocol's (DSE App. B.1: acts 32, intent 64, response 128; futuretod: the model's limit, TOD-BERT's 512)")
	fs.IntVar(&c.Model.Batch, "batch-size", 64, "texts per forward pass")
	fs.IntVar(&c.Model.Threads, "threads", 0, "libtorch intra-op threads; 0 = libtorch's default")
	fs.StringVar(&c.Data.Dataset, "dataset", "", "a dataset read in its upstream layout from --data-root, or the name given to --train/--test files")
	fs.StringVar(&c.Data.Root, "data-root", "", "folder of the evaluation sets (default: data/eval in the shared folder, $CONVREP_SHARED or else ../shared from the working directory)")
	fs.StringVar(&c.Data.Train, "train", "", "a CSV or JSON lines file of labelled training examples (support sets are drawn from it)")
	fs.StringVar(&c.Data.Test, "test", "", "a CSV or JSON lines file of test examples (queries)")
	fs.StringVar(&c.Data.TextColumn, "text-column", "text", "the text column or field of --train/--test")
	fs.StringVar(&c.Data.LabelColumn, "label-column", "", "the label column or field of --train/--test (for response selection: the response); default: the other column of a two-column file, or the one named label, intent or category")
	fs.StringVar(&c.Data.OOSLabel, "oos-label", evaluate.OOSLabel, "the label that marks out-of-scope rows in --train/--test files")
	fs.StringVar(&c.Seeds, "seeds", "0-9", "seeds of the sampled splits: a list (0,1,2) or a range (0-9)")
	fs.StringVar(&c.Splits, "splits", "", "evaluate on the support sets / candidate lists saved in this folder instead of sampling them")
	fs.StringVar(&c.WriteSplits, "write-splits", "", "save every sampled support set / candidate list as JSON in this folder")
	fs.StringVar(&c.Output, "output", "", "write the result as JSON to this file (and a Markdown table beside it, .md), or into this folder as TASK.json; default: Markdown on stdout")
	fs.BoolVar(&c.Quiet, "quiet", false, "no progress bar")
}

// ftFlags are the fine-tuning settings. Their defaults are a paper's protocol for the task (--protocol:
// DSE App. B.1 or FutureTOD App. B, finetune.Defaults); a flag given on the command line wins.
type ftFlags struct {
	task, protocol                 string
	fixed                          *finetune.Protocol // a task no paper sets (the probes): these defaults, no --protocol
	epochs, batch, patience, every int
	lr, dropout                    float64
}

// register adds the fine-tuning flags for task (finetune.TaskActs, TaskIntent, TaskResponse), their help
// naming each paper's default; with fixed, those defaults and no --protocol.
func (f *ftFlags) register(fs *flag.FlagSet, task string, fixed *finetune.Protocol) {
	f.task, f.fixed = task, fixed
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
		fs.StringVar(&f.protocol, "protocol", finetune.PaperDSE, "whose fine-tuning setting gives the defaults: dse (DSE App. B.1) or futuretod (FutureTOD App. B, §3.2, and TOD-BERT's code where it is silent)")
	}
	fs.IntVar(&f.epochs, "epochs", 0, "fine-tuning epochs (early stopping may end sooner); default "+byPaper(func(p finetune.Protocol) any { return p.Epochs }))
	fs.IntVar(&f.batch, "ft-batch-size", 0, "fine-tuning batch size; default "+byPaper(func(p finetune.Protocol) any { return p.BatchSize }))
	fs.IntVar(&f.every, "eval-every", 0, "optimiser steps between validations, -1 = after every epoch; default "+byPaper(func(p finetune.Protocol) any { return p.EvalEvery }))
	fs.IntVar(&f.patience, "patience", 0, "validations in a row without a better score tolerated before stopping (negative: never); default "+byPaper(func(p finetune.Protocol) any { return p.Patience }))
	fs.Float64Var(&f.lr, "lr", 0, "learning rate (AdamW); default "+byPaper(func(p finetune.Protocol) any { return p.LR }))
	fs.Float64Var(&f.dropout, "dropout", -1, "dropout on the pooled representation before the classifier, in training; default "+byPaper(func(p finetune.Protocol) any { return p.Dropout }))
}

// resolve fills in, from the protocol, every fine-tuning flag not given on the command line, and
// --max-length and --pooling (the model folder's declared pooling, else mean, where the protocol names
// none). It returns the settings a classifier run takes and a description of where they came from.
func (f *ftFlags) resolve(fs *flag.FlagSet, c *suite.Common) (finetune.Config, string, error) {
	p, source := finetune.Protocol{}, ""
	if f.fixed != nil {
		p, source = *f.fixed, f.fixed.Source
	} else {
		var err error
		if p, err = finetune.Defaults(f.protocol, f.task); err != nil {
			return finetune.Config{}, "", fmt.Errorf("--protocol: %w", err)
		}
		source = p.Source
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	pick := func(name string, v *int, def int) {
		if !given[name] || (name == "max-length" && *v == -1) {
			*v = def
		}
	}
	pick("epochs", &f.epochs, p.Epochs)
	pick("ft-batch-size", &f.batch, p.BatchSize)
	pick("eval-every", &f.every, p.EvalEvery)
	pick("patience", &f.patience, p.Patience)
	pick("max-length", &c.Model.MaxLength, p.MaxLength)
	if !given["lr"] {
		f.lr = p.LR
	}
	if !given["dropout"] {
		f.dropout = p.Dropout
	}
	pooling := models.Pooling(c.Model.Pooling)
	if !given["pooling"] || c.Model.Pooling == "" {
		pooling = p.Pooling
		if pooling == "" {
			pooling = modelref.Pooling(c.Model.Ref)
		}
	}
	pooling, err := models.ParsePooling(string(pooling))
	if err != nil {
		return finetune.Config{}, "", fmt.Errorf("--pooling: %w", err)
	}
	c.Model.Pooling = string(pooling)
	switch {
	case f.epochs < 1, f.batch < 1, f.lr <= 0, f.dropout < 0, f.dropout >= 1, f.every == 0 || f.every < -1, c.Model.MaxLength < 0:
		return finetune.Config{}, "", fmt.Errorf("fine-tuning settings: --epochs %d, --ft-batch-size %d, --lr %g, --dropout %g, --eval-every %d, --max-length %d: "+
			"want epochs, batch size and lr above 0, dropout in [0, 1), eval-every above 0 or -1, max length 0 (the model's limit) or more",
			f.epochs, f.batch, f.lr, f.dropout, f.every, c.Model.MaxLength)
	}
	every := f.every
	if every < 0 {
		every = 0 // finetune.Config: after every epoch
	}
	return finetune.Config{Epochs: f.epochs, BatchSize: f.batch, LR: f.lr, Patience: f.patience, EvalEvery: every, Dropout: f.dropout,
		Pooling: pooling, MaxLength: c.Model.MaxLength}, source, nil
}

// settings are the fine-tuning settings a result records.
func (f *ftFlags) settings(c *suite.Common, source string) map[string]any {
	protocol := f.protocol
	if f.fixed != nil {
		protocol = "fixed"
	}
	return map[string]any{"protocol": protocol, "epochs": f.epochs, "batch_size": f.batch, "lr": f.lr, "patience": f.patience,
		"eval_every": f.every, "dropout": f.dropout, "pooling": c.Model.Pooling, "max_length": c.Model.MaxLength, "defaults_from": source}
}

// setDefault gives a flag that common registers another default for one task, in its value and in --help.
func setDefault(fs *flag.FlagSet, name, value string) error {
	f := fs.Lookup(name)
	if f == nil {
		return fmt.Errorf("no flag --%s to set a default for", name)
	}
	if err := f.Value.Set(value); err != nil {
		return fmt.Errorf("default %q of --%s: %w", value, name, err)
	}
	f.DefValue = value
	return nil
}
