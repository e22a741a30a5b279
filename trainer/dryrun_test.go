package trainer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"convrep/experiment"
	"convrep/internal/shared"
)

// supportCSV is a CSV export of n support chats of four turns, one row per turn, as examples/own-dialogues has
// them, with the faults of a real export: the rows of T-05 come back after T-06's, T-09 has a speaker in no
// list, and the order column is turn_no, which the experiment does not name.
func supportCSV(n int) string {
	var b strings.Builder
	b.WriteString("conversation_id,turn_no,role,message\n")
	turns := []string{"my parcel has not arrived yet", "let me check the tracking number for you",
		"it says delivered but nothing is here", "I will open a claim with the courier today"}
	row := func(d, t int) {
		role := []string{"customer", "agent"}[t%2]
		if d == 9 && t == 1 {
			role = "agnet"
		}
		fmt.Fprintf(&b, "T-%02d,%d,%s,%s (chat %d)\n", d, t+1, role, turns[t], d)
	}
	for d := 1; d <= n; d++ {
		for t := range 4 {
			if d == 5 && t == 3 {
				continue // comes after T-06
			}
			row(d, t)
		}
		if d == 6 {
			row(5, 3)
		}
	}
	return b.String()
}

// The dry run reads what the run will read, and what it says the run would stop on is what the run stops on:
// each case's dry run is checked against trainer.New on the same experiment, which builds the model, the
// pairs and the validation set for real.
func TestDryRunReadsTheData(t *testing.T) {
	backbone := shared.MustPath(t, "models", "mini-bert-dialogue-mlm")
	dir := t.TempDir()
	csv := filepath.Join(dir, "data", "support.csv")
	os.MkdirAll(filepath.Dir(csv), 0o755)
	if err := os.WriteFile(csv, []byte(supportCSV(30)), 0o644); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(dir, "support.toml")
	os.WriteFile(exp, []byte(fmt.Sprintf(`name = "support"
output_dir = "runs/support"
seed = 1
[model]
backbone = %q
max_length = 32
device = "cpu"
[data]
files = ["data/support.csv"]
merge_same_speaker = true
min_words = 3
cache_dir = "runs/cache"
[data.columns]
dialogue = "conversation_id"
speaker = "role"
text = "message"
[objective]
name = "dse"
[train]
batch_size = 16
epochs = 1
lr = 5e-5
head_lr = 1e-3
valid_share = 0.1
eval_every = 20
`, backbone)), 0o644)
	malformed := []string{
		csv + `: line 18 (dialogue T-05): dialogue "T-05" of corpus support comes back after other dialogues`,
		csv + `: line 25 (dialogue T-05): dialogue "T-05" of corpus support comes back after other dialogues`,
		csv + `: line 35 (dialogue T-09): speaker "agnet" is neither a user speaker`,
	}
	for _, c := range []struct {
		name string
		sets []string
		want []string // in the output, in this order
		// run is what trainer.New says: "" for success, else in its error
		run string
		// problem is true when the dry run fails
		problem bool
	}{
		{"bad rows and too few to validate", nil, append([]string{
			"paths       ", "  model.backbone  " + backbone, "  model.tokenizer " + backbone, "  output_dir      " + filepath.Join(dir, "runs", "support"),
			"  data.cache_dir  " + filepath.Join(dir, "runs", "cache"), "  data.files      " + csv,
			"notice      " + csv + `: column "turn_no" looks like a turn order`,
			"dialogues, 3 malformed records", "malformed   the run stops at the first (data.skip_bad = false):"},
			append(malformed,
				"examples    72 training examples (dse pairs)",
				"validation  train.valid_share 0.1, seed 1: 4 of 28 dialogues held out, 12 validation examples: fewer than a batch of 16: the run would stop",
				"problems    the run would stop on:",
				"  - 3 malformed records (listed above): the run stops at the first; fix them, or set data.skip_bad = true",
				"  - train.valid_share 0.1: the 4 held-out dialogues make 12 validation examples, fewer than a batch of 16: raise train.valid_share, lower train.batch_size to 12 or less",
				"writes nothing")...),
			csv + ": line 25 (dialogue T-05)", true}, // the run meets T-05 as malformed where its rows come back
		{"skip_bad, too few to validate", []string{"data.skip_bad=true"}, []string{
			"malformed   data.skip_bad skips each with its dialogue:",
			"  - train.valid_share 0.1: the 4 held-out dialogues make 12 validation examples, fewer than a batch of 16"},
			"train.valid_share 0.1: the 4 held-out dialogues make 12 validation examples, fewer than a batch of 16", true},
		{"fits", []string{"data.skip_bad=true", "train.valid_share=0.3", "train.batch_size=4", "data.columns.turn=\"turn_no\""}, []string{
			"data        read in", "28 dialogues, 3 malformed records",
			"examples    60 training examples (dse pairs)",
			"validation  train.valid_share 0.3, seed 1: 8 of 28 dialogues held out, 24 validation examples: at least a batch of 4",
			"steps       15: 1 epochs of 15 steps (60 examples, 4 a step)", "writes nothing"}, "", false},
		{"no full batch", []string{"data.skip_bad=true", "train.valid_share=0", "train.eval_every=0", "train.batch_size=100", "train.drop_last=true"}, []string{
			"examples    84 training examples (dse pairs); no validation (train.valid_share = 0)",
			"  - 84 examples make no full batch of 100×1: lower train.batch_size"},
			"84 examples make no full batch of 100×1", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := experiment.Load(exp, c.sets)
			if err != nil {
				t.Fatal(err)
			}
			var w bytes.Buffer
			err = DryRun(context.Background(), e, &w, zap.NewNop())
			if (err != nil) != c.problem {
				t.Errorf("dry run: error %v, want one: %v", err, c.problem)
			}
			out := w.String()
			at := 0
			for _, want := range c.want {
				i := strings.Index(out[at:], want)
				if i < 0 {
					t.Fatalf("the dry run lacks %q after byte %d:\n%s", want, at, out)
				}
				at += i + len(want)
			}
			if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
				t.Fatalf("the dry run wrote %s", filepath.Join(dir, "runs"))
			}
			// The run itself, as far as it builds: it stops where the dry run said, or builds what it counted.
			tr, err := New(context.Background(), e, Options{}, zap.NewNop())
			os.RemoveAll(filepath.Join(dir, "runs"))
			switch {
			case c.run == "" && err != nil:
				t.Fatalf("the run: %v", err)
			case c.run != "" && (err == nil || !strings.Contains(err.Error(), c.run)):
				t.Fatalf("the run: %v, want %q", err, c.run)
			case c.run == "":
				defer tr.cl.close()
				if tr.data.Len() != 60 || tr.valid.data.Len() != 24 || len(tr.valid.keys) != 8 || tr.total != 15 {
					t.Errorf("the run built %d examples, %d validation examples of %d dialogues, %d steps; the dry run said 60, 24 of 8, 15",
						tr.data.Len(), tr.valid.data.Len(), len(tr.valid.keys), tr.total)
				}
			}
		})
	}
}

// Data over the bound is not read, and the dry run says so.
func TestDryRunSkipsBigData(t *testing.T) {
	backbone := shared.MustPath(t, "models", "mini-bert-dialogue-mlm")
	old := dryRunReadBytes
	dryRunReadBytes = 100
	defer func() { dryRunReadBytes = old }()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "support.csv"), []byte(supportCSV(3)), 0o644)
	exp := filepath.Join(dir, "e.toml")
	os.WriteFile(exp, []byte(fmt.Sprintf("name = \"e\"\noutput_dir = \"out\"\n[model]\nbackbone = %q\n[data]\nfiles = [\"support.csv\"]\n"+
		"[data.columns]\ndialogue = \"conversation_id\"\nspeaker = \"role\"\ntext = \"message\"\n[objective]\nname = \"dse\"\n[train]\nbatch_size = 2\nlr = 1e-5\nhead_lr = 1e-3\n", backbone)), 0o644)
	e, err := experiment.Load(exp, nil)
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	if err := DryRun(context.Background(), e, &w, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	if want := "data        not read: 1 kB is more than the 100 bytes a dry run reads"; !strings.Contains(w.String(), want) {
		t.Errorf("the dry run lacks %q:\n%s", want, w.String())
	}
}
