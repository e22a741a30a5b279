package modelcard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// frontMatter reads the YAML front matter's top-level keys: scalars, and lists of "- item" lines.
func frontMatter(t *testing.T, md string) map[string][]string {
	t.Helper()
	rest, ok := strings.CutPrefix(md, "---\n")
	if !ok {
		t.Fatal("no front matter")
	}
	fm, _, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		t.Fatal("front matter not closed")
	}
	out := map[string][]string{}
	key := ""
	for _, line := range strings.Split(fm, "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "- "):
			if key == "" {
				t.Fatalf("list item %q outside a key", line)
			}
			out[key] = append(out[key], strings.TrimPrefix(line, "- "))
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				t.Fatalf("front matter line %q is not key: value", line)
			}
			key = k
			out[k] = nil
			if v = strings.TrimSpace(v); v != "" {
				out[k] = []string{v}
			}
		}
	}
	return out
}

func TestCard(t *testing.T) {
	c := Card{Name: "dse_small_cpu", Paper: "Learning Dialogue Representations from Consecutive Utterances (Zhou et al.), NAACL 2022", ExperimentFile: "experiments/dse_small_cpu.toml", Experiment: "name = \"dse_small_cpu\"\n",
		Objective: "dse", BaseModel: "bert-base-uncased", Datasets: []string{"woz2", "camrest676"}, Examples: 25600, Steps: 200,
		FinalLoss: 4.51, Pooling: "mean", Normalize: true, MaxLength: 32, Results: "| task | score |\n|---|---|\n| clinc150 1-shot | 41.2 |"}
	md := c.Markdown()
	fm := frontMatter(t, md)
	for key, want := range map[string]string{"library_name": "sentence-transformers", "base_model": "bert-base-uncased",
		"pipeline_tag": "sentence-similarity"} {
		if got := fm[key]; len(got) != 1 || got[0] != want {
			t.Errorf("front matter %s = %v, want %s", key, got, want)
		}
	}
	if got := strings.Join(fm["datasets"], ","); got != "woz2,camrest676" {
		t.Errorf("datasets %q", got)
	}
	if tags := strings.Join(fm["tags"], ","); !strings.Contains(tags, "convrep") || !strings.Contains(tags, "dse") {
		t.Errorf("tags %q", tags)
	}
	if _, ok := fm["license"]; ok {
		t.Error("the licence is the user's to choose, not the card's")
	}
	for _, want := range []string{"# dse_small_cpu", "NAACL 2022", "**mean pooling**", "L2-normalised", "## Training", "| steps | 200 |",
		"| final loss | 4.5100 |", "## Evaluation", "clinc150 1-shot", "```toml\nname = \"dse_small_cpu\"\n```"} {
		if !strings.Contains(md, want) {
			t.Errorf("card has no %q", want)
		}
	}
	c.Datasets, c.Files = nil, []string{"/home/someone/chats/support.csv", "more.jsonl"}
	md = c.Markdown()
	if !strings.Contains(md, "| data | own dialogues `support.csv`, own dialogues `more.jsonl` |") || strings.Contains(md, "/home/someone") {
		t.Errorf("own files in the card: want their base names in the data row:\n%s", md)
	}
	if _, ok := frontMatter(t, md)["datasets"]; ok {
		t.Error("own files are not hub datasets: the front matter lists none")
	}
	c.BaseModel, c.Results = "", ""
	md = c.Markdown()
	if _, ok := frontMatter(t, md)["base_model"]; ok || strings.Contains(md, "## Evaluation") {
		t.Error("a random backbone has no base_model, and no evaluation means no section")
	}
}

func TestRun(t *testing.T) {
	r := Run{Name: "x", ExperimentFile: "experiments/x.toml", OutputDir: "runs/x", Checkpoints: []string{"step-000000020.safetensors", "step-000000010.safetensors"}}
	md := r.Markdown()
	for _, want := range []string{"convrep train --resume experiments/x.toml", "`checkpoints/`", "`metrics.jsonl`",
		"step-000000010.safetensors, step-000000020.safetensors"} {
		if !strings.Contains(md, want) {
			t.Errorf("unfinished run guide has no %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "cmd/evaluate") || strings.Contains(md, "`model/`") {
		t.Error("an unfinished run has no model to evaluate")
	}
	if strings.Contains(md, "tensorboard") {
		t.Error("a run without an event file names TensorBoard")
	}
	r.EventFile = "events.out.tfevents.1.h.convrep"
	if md := r.Markdown(); !strings.Contains(md, "| `events.out.tfevents.1.h.convrep` |") || !strings.Contains(md, "tensorboard --logdir runs/x") {
		t.Errorf("run guide does not name its event file:\n%s", md)
	}
	r.Done = true
	md = r.Markdown()
	for _, want := range []string{"`model/`", "convrep evaluate suite --model runs/x --output-dir runs/x/eval",
		"convrep evaluate suite --model experiments/x.toml", "convrep embed --model runs/x/model"} {
		if !strings.Contains(md, want) {
			t.Errorf("finished run guide has no %q:\n%s", want, md)
		}
	}
}

// cmd/evaluate's table goes into a convrep card, replacing an older one; other folders' READMEs are left alone.
func TestSetResults(t *testing.T) {
	dir := t.TempDir()
	c := Card{Name: "x", Objective: "dse", Experiment: "name = \"x\"", Pooling: "mean"}
	if err := c.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"| a | 1 |", "| b | 2 |"} {
		if ok, err := SetResults(dir, table); !ok || err != nil {
			t.Fatalf("SetResults: %v, %v", ok, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	md := string(b)
	if strings.Count(md, "## Evaluation") != 1 || !strings.Contains(md, "| b | 2 |") || strings.Contains(md, "| a | 1 |") ||
		strings.Index(md, "## Evaluation") > strings.Index(md, "## Experiment file") {
		t.Errorf("card after two evaluations:\n%s", md)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "README.md"), []byte("# someone's model\n"), 0o644)
	if ok, err := SetResults(other, "| a | 1 |"); ok || err != nil {
		t.Errorf("a README that is no convrep card: %v, %v", ok, err)
	}
	if ok, err := SetResults(t.TempDir(), "| a | 1 |"); ok || err != nil {
		t.Errorf("no README: %v, %v", ok, err)
	}
}

// Steps reads back the steps a card states, after an evaluation too; a folder without a convrep card says
// nothing.
func TestSteps(t *testing.T) {
	dir := t.TempDir()
	if err := (Card{Name: "x", Objective: "dse", Steps: 1234, Pooling: "mean"}).Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := SetResults(dir, "| steps | 9 |"); err != nil {
		t.Fatal(err)
	}
	if n, ok := Steps(dir); n != 1234 || !ok {
		t.Errorf("Steps = %d, %v; want 1234", n, ok)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "README.md"), []byte("| steps | 5 |\n"), 0o644)
	for _, d := range []string{other, t.TempDir()} {
		if n, ok := Steps(d); ok {
			t.Errorf("%s: Steps = %d, want none", d, n)
		}
	}
}
