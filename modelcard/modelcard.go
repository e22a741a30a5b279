// Package modelcard writes what a run leaves for people: the model card of its model/ folder (the hub's
// README.md with YAML front matter) and the README.md of the run folder that says what is where and how to
// resume, evaluate and use it.
package modelcard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"convrep/internal/atomicfile"
	"convrep/rundir"
)

// Card is what the model card says of a trained model.
type Card struct {
	Name           string   // the experiment's name
	ExperimentFile string   // the experiment file's path
	Experiment     string   // its text
	Objective      string   // the registered objective name
	Paper          string   // the objective's paper, title and venue, as it registered it; "" for none
	BaseModel      string   // the backbone's hub name; "" for a local folder or a random initialisation
	Datasets       []string // the pretraining corpora
	Files          []string // the user's own dialogue files (data.files), named in the card by their base names
	Examples       int      // training examples
	Steps          int64    // optimiser steps
	FinalLoss      float64  // the mean loss of the last logged window
	Pooling        string   // how a text becomes one vector (mean or cls)
	Normalize      bool     // whether vectors are L2-normalised
	MaxLength      int      // tokens per text in training
	Results        string   // a Markdown results table from cmd/evaluate, or ""
}

// Markdown is the card: YAML front matter the hub reads, then the sections.
func (c Card) Markdown() string {
	var b strings.Builder
	b.WriteString("---\nlibrary_name: sentence-transformers\npipeline_tag: sentence-similarity\ntags:\n")
	for _, t := range []string{"sentence-transformers", "sentence-similarity", "feature-extraction", "dialogue", "convrep", c.Objective} {
		fmt.Fprintf(&b, "- %s\n", t)
	}
	if c.BaseModel != "" {
		fmt.Fprintf(&b, "base_model: %s\n", c.BaseModel)
	}
	if len(c.Datasets) > 0 {
		b.WriteString("datasets:\n")
		for _, d := range c.Datasets {
			fmt.Fprintf(&b, "- %s\n", d)
		}
	}
	b.WriteString("# license: choose the licence of the weights, within the terms of the corpora above\n---\n\n")
	fmt.Fprintf(&b, "# %s\n\n", c.Name)
	paper := c.Paper
	if paper == "" {
		paper = "(no paper recorded for this objective)"
	}
	fmt.Fprintf(&b, "A dialogue encoder trained by convrep with the `%s` objective: %s.\n\n", c.Objective, paper)
	norm := "not normalised (compare by dot product)"
	if c.Normalize {
		norm = "L2-normalised (compare by cosine)"
	}
	fmt.Fprintf(&b, "## Use\n\nA text becomes one vector by **%s pooling** of the last layer, %s, at most %d tokens. "+
		"sentence-transformers applies this from the folder's modules:\n\n```python\nfrom sentence_transformers import SentenceTransformer\n"+
		"model = SentenceTransformer(\"path/to/model\")\nvectors = model.encode([\"i need a cheap hotel in the north\"])\n```\n\n"+
		"and convrep from the same files: `convrep embed --model path/to/model --input texts.txt --output vectors.jsonl`.\n\n",
		c.Pooling, norm, c.MaxLength)
	fmt.Fprintf(&b, "## Training\n\n| | |\n|---|---|\n| objective | `%s` |\n| data | %s |\n| examples | %d |\n| steps | %d |\n| final loss | %.4f |\n\n",
		c.Objective, c.data(), c.Examples, c.Steps, c.FinalLoss)
	if c.Results != "" {
		fmt.Fprintf(&b, "## Evaluation\n\n%s\n\n", strings.TrimSpace(c.Results))
	}
	fmt.Fprintf(&b, "## Experiment file\n\n`%s`, as it was run:\n\n```toml\n%s\n```\n", c.ExperimentFile, strings.TrimSpace(c.Experiment))
	return b.String()
}

// data is the training table's data cell: the corpora, then the own files by base name (a folder's path says
// where the trainer's machine kept them, nothing a reader of the card needs), "none" when both are empty.
func (c Card) data() string {
	parts := append([]string(nil), c.Datasets...)
	for _, f := range c.Files {
		parts = append(parts, fmt.Sprintf("own dialogues `%s`", filepath.Base(f)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Write writes the card as dir/README.md, atomically.
func (c Card) Write(dir string) error {
	return atomicfile.WriteFile(filepath.Join(dir, "README.md"), []byte(c.Markdown()))
}

// Run is what a run folder's README says.
type Run struct {
	Name           string
	ExperimentFile string
	OutputDir      string
	Checkpoints    []string // file names under checkpoints/, oldest first
	Done           bool     // the run finished: model/ holds its model
	EventFile      string   // the name of its TensorBoard event file, "" without one
}

// Markdown is the run folder's guide.
func (r Run) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Run %s\n\nTrained from `%s` by convrep.\n\n| path | what |\n|---|---|\n", r.Name, r.ExperimentFile)
	rows := [][2]string{
		{"checkpoints/", "the run's state every `checkpoint_every` steps (weights, optimiser, RNG, data position); `--resume` continues from the newest"},
		{"metrics.jsonl", "one JSON line per `log_every` steps: step, loss, learning rates, gradient norm, pairs/s"},
		{"loss.png", "the loss curve"},
	}
	if r.EventFile != "" {
		rows = append(rows, [2]string{r.EventFile, fmt.Sprintf("the same scalars for TensorBoard, written as the run goes: `tensorboard --logdir %s`", r.OutputDir)})
	}
	if r.Done {
		rows = append(rows, [2]string{"model/", "the trained encoder in HuggingFace layout, also a sentence-transformers model, with its model card"})
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "| `%s` | %s |\n", row[0], row[1])
	}
	if len(r.Checkpoints) > 0 {
		cs := append([]string(nil), r.Checkpoints...)
		sort.Strings(cs)
		fmt.Fprintf(&b, "\nCheckpoints now: %s.\n", strings.Join(cs, ", "))
	}
	fmt.Fprintf(&b, "\n## Commands\n\n```sh\n# continue (or extend with --set train.max_steps=N under a constant schedule)\nconvrep train --resume %s\n", r.ExperimentFile)
	if r.Done {
		fmt.Fprintf(&b, "# the papers' similarity tables for this model, beside its untrained backbone\n"+
			"convrep evaluate suite --model %s --output-dir %s\n"+
			"convrep evaluate suite --model %s --output-dir %s\n"+
			"convrep evaluate report --output %s %s %s\n"+
			"# embed texts with it (one per line, or JSON lines with a \"text\" field)\n"+
			"convrep embed --model %s --input texts.txt --output vectors.jsonl\n",
			r.OutputDir, filepath.Join(r.OutputDir, "eval"), r.ExperimentFile, filepath.Join(r.OutputDir, "eval-untrained"),
			filepath.Join(r.OutputDir, "eval", "report.md"), filepath.Join(r.OutputDir, "eval-untrained"), filepath.Join(r.OutputDir, "eval"),
			rundir.At(r.OutputDir).ModelDir())
	}
	b.WriteString("```\n")
	return b.String()
}

// Write writes the guide as dir/README.md, atomically.
func (r Run) Write(dir string) error {
	return atomicfile.WriteFile(filepath.Join(dir, "README.md"), []byte(r.Markdown()))
}

// Steps reads the optimiser steps out of the model card of dir, as Card.Markdown writes them; false when dir
// holds no convrep card or the card does not say.
func Steps(dir string) (int64, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil || !strings.HasPrefix(string(b), "---\n") || !strings.Contains(string(b), "\n- convrep\n") {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "| steps | "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "|")), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// SetResults puts an evaluation table into the model card of dir, replacing the one there: cmd/evaluate
// records what it measured on a convrep model. A folder without a convrep card is left alone (false).
func SetResults(dir, results string) (bool, error) {
	p := filepath.Join(dir, "README.md")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	card := string(b)
	if !strings.HasPrefix(card, "---\n") || !strings.Contains(card, "\n- convrep\n") {
		return false, nil
	}
	section := "## Evaluation\n\n" + strings.TrimSpace(results) + "\n\n"
	if i := strings.Index(card, "## Evaluation\n"); i >= 0 {
		end := strings.Index(card[i+1:], "\n## ")
		if end < 0 {
			card = card[:i] + section
		} else {
			card = card[:i] + section + card[i+1+end+1:]
		}
	} else if i := strings.Index(card, "## Experiment file\n"); i >= 0 {
		card = card[:i] + section + card[i:]
	} else {
		card += "\n" + section
	}
	return true, atomicfile.WriteFile(p, []byte(card))
}
