package trainer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"go.uber.org/zap/zaptest"

	"convrep/datasets"
	"convrep/internal/shared"
	"convrep/safetensors"
	"convrep/objectives"
	"convrep/tokenizers"
)

// tinyFutureTOD writes a FutureTOD experiment on a tiny random BERT and 64 woz2 dialogues (eight batches of
// eight per epoch), with dropout on, and returns its path; output goes to dir/out.
func tinyFutureTOD(t *testing.T, dir string, objective string) string {
	t.Helper()
	tok, root := tinyData(t)
	body := fmt.Sprintf(`name = "tiny_futuretod"
output_dir = %q
seed = 11

[model]
tokenizer = %q
max_length = 48

[model.random]
arch = "bert"
layers = 2
hidden = 32
heads = 2
intermediate = 64
max_positions = 64
dropout = 0.2

[data]
root = %q
corpora = ["woz2"]
max_examples = 64

[objective]
name = "futuretod"
top_k_layers = 2
%s

[train]
batch_size = 8
epochs = 3
max_steps = 12
lr = 2e-3
checkpoint_every = 2
keep_checkpoints = 20
log_every = 1
threads = 1
`, filepath.Join(dir, "out"), tok, root, objective)
	return writeExperimentIn(t, dir, body)
}

// ckptTensors reads one checkpoint's tensors by name.
func ckptTensors(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, x := range f.Tensors {
		out[x.Name] = x.Data
	}
	return out
}

// teacherMatches compares the teacher stored in checkpoint a with the student (param/) of checkpoint b, or
// with a's own teacher when b is a teacher too (teacherOf): true when every tensor is the same bytes.
func teacherMatches(t *testing.T, a map[string][]byte, b map[string][]byte, prefix string) bool {
	t.Helper()
	n := 0
	for name, data := range a {
		param, ok := strings.CutPrefix(name, objectivePrefix+"teacher.")
		if !ok {
			continue
		}
		n++
		other, ok := b[prefix+param]
		if !ok {
			t.Fatalf("no %s%s beside %s", prefix, param, name)
		}
		if !bytes.Equal(data, other) {
			return false
		}
	}
	if n == 0 {
		t.Fatal("the checkpoint holds no teacher")
	}
	return true
}

// In a real run the checkpoints show the teacher equal to the student right after each refresh and frozen
// in between, never moved by the optimiser: every 2 steps, and every epoch (8 steps) as in the paper.
func TestFutureTODTeacherInCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name      string
		objective string
		refreshed func(step int64) bool
	}{
		{"every 3 steps", "refresh_every = 3\nrefresh_unit = \"steps\"", func(s int64) bool { return s%3 == 0 }},
		{"every epoch", "refresh_every = 1", func(s int64) bool { return s%8 == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exp := tinyFutureTOD(t, dir, tc.objective)
			out := filepath.Join(dir, "out")
			if err := train(t, exp, []string{"train.checkpoint_every=1"}, false); err != nil {
				t.Fatal(err)
			}
			last := map[string][]byte{} // the teacher as last refreshed
			refreshes := 0
			for step := int64(1); step <= 12; step++ {
				c := ckptTensors(t, checkpointPath(out, step))
				if tc.refreshed(step) {
					refreshes++
					if !teacherMatches(t, c, c, paramPrefix) {
						t.Fatalf("step %d: right after a refresh the teacher differs from the student", step)
					}
				} else {
					if teacherMatches(t, c, c, paramPrefix) {
						t.Fatalf("step %d: the teacher equals the student without a refresh: the optimiser moved it or a refresh came early", step)
					}
					if len(last) > 0 && !teacherMatches(t, c, last, objectivePrefix+"teacher.") {
						t.Fatalf("step %d: the teacher changed between refreshes", step)
					}
				}
				if tc.refreshed(step) || len(last) == 0 {
					last = c
				}
			}
			if refreshes == 0 {
				t.Fatal("no refresh in 12 steps")
			}
		})
	}
}

// A FutureTOD run resumed from each of its checkpoints, those at an epoch's end included (step 8, right
// after the refresh), ends in the same bytes as the uninterrupted run, teacher included.
func TestFutureTODResumeIsBitIdentical(t *testing.T) {
	dir := t.TempDir()
	exp := tinyFutureTOD(t, dir, "refresh_every = 1")
	full := filepath.Join(dir, "out")
	if err := train(t, exp, nil, false); err != nil {
		t.Fatal(err)
	}
	ref := readMetricLines(t, full)
	checkSteps(t, "the full run", ref, 12)
	if c := ckptTensors(t, checkpointPath(full, 12)); !hasPrefix(c, objectivePrefix+"teacher.") {
		t.Fatal("the final checkpoint holds no teacher")
	}
	for _, from := range []int64{4, 8, 10} {
		t.Run(fmt.Sprintf("from step %d", from), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			if err := os.MkdirAll(checkpointDir(out), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(checkpointPath(full, from))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(checkpointPath(out, from), b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := train(t, exp, []string{fmt.Sprintf("output_dir=%q", out)}, true); err != nil {
				t.Fatal(err)
			}
			sameFiles(t, checkpointPath(full, 12), checkpointPath(out, 12))
			sameFiles(t, filepath.Join(full, "model", "model.safetensors"), filepath.Join(out, "model", "model.safetensors"))
			for i, m := range readMetricLines(t, out) {
				if !sameTrajectory(m, ref[int(from)+i]) {
					t.Errorf("step %d differs from the full run:\n%+v\n%+v", m.Step, m, ref[int(from)+i])
				}
			}
		})
	}
	// A checkpoint whose teacher is missing is refused, not resumed with a wrong teacher.
	t.Run("checkpoint without teacher", func(t *testing.T) {
		f, err := safetensors.ReadFile(checkpointPath(full, 10))
		if err != nil {
			t.Fatal(err)
		}
		var kept []safetensors.Tensor
		for _, x := range f.Tensors {
			if !strings.HasPrefix(x.Name, objectivePrefix) {
				kept = append(kept, x)
			}
		}
		out := filepath.Join(t.TempDir(), "out")
		if err := os.MkdirAll(checkpointDir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := safetensors.WriteFile(checkpointPath(out, 10), f.Metadata, kept); err != nil {
			t.Fatal(err)
		}
		_, err = newTrainer(t, exp, []string{fmt.Sprintf("output_dir=%q", out)}, true)
		if err == nil || !strings.Contains(err.Error(), "objective's state") {
			t.Fatalf("resuming without the teacher: %v, want a refusal naming the objective's state", err)
		}
	})
}

func hasPrefix(m map[string][]byte, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// Thirty steps of the tiny run lower the loss, both of its parts included.
func TestFutureTODLossFalls(t *testing.T) {
	dir := t.TempDir()
	exp := tinyFutureTOD(t, dir, "refresh_every = 2")
	if err := train(t, exp, []string{"train.max_steps=24", "train.checkpoint_every=100"}, false); err != nil {
		t.Fatal(err)
	}
	ms := readMetricLines(t, filepath.Join(dir, "out"))
	checkSteps(t, "the run", ms, 24)
	avg := func(ms []Metric, key string) float64 {
		s := 0.0
		for _, m := range ms {
			if key == "" {
				s += m.Loss
			} else {
				s += m.Objective[key]
			}
		}
		return s / float64(len(ms))
	}
	for _, key := range []string{"", "mlm", "distill"} {
		first, last := avg(ms[:4], key), avg(ms[len(ms)-4:], key)
		t.Logf("%q: first four steps %.4f, last four %.4f", key, first, last)
		if !(last < first) {
			t.Errorf("%q did not fall: first four steps %.4f, last four %.4f", key, first, last)
		}
	}
}

// The data side: utterances tokenised one by one join into exactly what the tokenizer makes of the flattened
// dialogue; the student's context is the start of the teacher's input; labels sit on non-special tokens
// only; batches repeat within an epoch and change across epochs.
func TestFutureTODData(t *testing.T) {
	tokDir := shared.MustPath(t, "data", "vocab", "bert-base-uncased")
	tok, err := tokenizers.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	tok.AddSpecialTokens(objectives.RequirementsOf(objectives.FutureTODName).SpecialTokens...)
	dir := t.TempDir()
	e, err := LoadExperiment(tinyFutureTOD(t, dir, "max_future = 2"), []string{"model.max_length=512"})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := newFutureTODData(e, tok, tokDir, nil, tokenizers.TruncateRight, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	d := ds.(*futureTODData)
	dialogues, err := datasets.ReadAll(e.Data.Root, e.Data.Corpora, datasets.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	usr, _ := tok.TokenID("[USR]")
	sys, _ := tok.TokenID("[SYS]")
	checked := 0
	for _, dl := range dialogues {
		want, err := tok.Encode(datasets.FlattenTurns(dl.Turns, datasets.FlattenOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		// Find the dialogue among the kept ones by its utterance count and first utterance.
		for j := range d.utts {
			got := d.sequence(d.utts[j])
			if len(d.utts[j]) != len(dl.Turns) || len(got) != len(want) || !equalIDs(got, want) {
				continue
			}
			checked++
			for k, u := range d.utts[j] {
				if role := int64(u[0]); (dl.Turns[k].Speaker == datasets.User) != (role == usr) || (role != usr && role != sys) {
					t.Fatalf("dialogue %s utterance %d starts with id %d, not its role token", dl.ID, k, role)
				}
			}
		}
	}
	if checked < 32 {
		t.Fatalf("only %d of %d kept dialogues match the tokenizer's encoding of their flattened text", checked, len(d.utts))
	}

	idx := []int{0, 5, 17, 33, 63}
	batch := func(epoch int) objectives.FutureTODBatch {
		d.SetEpoch(epoch)
		b, err := d.Batch(idx, gotch.CPU)
		if err != nil {
			t.Fatal(err)
		}
		return b.Value.(objectives.FutureTODBatch)
	}
	b0 := batch(0)
	ctx, full := ints(t, b0.Context.IDs), ints(t, b0.Full.IDs)
	labels, cmask, fmask := ints(t, b0.Labels), ints(t, b0.Context.Mask), ints(t, b0.Full.Mask)
	chosen := 0
	for i := range ctx {
		n, nf := sum(cmask[i]), sum(fmask[i])
		if nf <= n {
			t.Errorf("row %d: the teacher's input (%d tokens) is not longer than the context (%d)", i, nf, n)
		}
		for k := 0; k < len(ctx[i]); k++ {
			orig := ctx[i][k]
			if labels[i][k] != objectives.IgnoreLabel {
				chosen++
				orig = labels[i][k]
				if k >= n || tok.IsSpecial(orig) {
					t.Errorf("row %d position %d: label on a special or padding token", i, k)
				}
			}
			if k < n-1 && orig != full[i][k] { // all but the context's [SEP]
				t.Errorf("row %d position %d: context token %d, teacher's %d", i, k, orig, full[i][k])
			}
		}
	}
	if chosen == 0 {
		t.Fatal("no token was masked")
	}
	if again := batch(0); fmt.Sprint(ints(t, again.Context.IDs), ints(t, again.Full.IDs)) != fmt.Sprint(ctx, full) {
		t.Error("the same epoch built two different batches")
	}
	if next := batch(1); fmt.Sprint(ints(t, next.Context.IDs), ints(t, next.Full.IDs)) == fmt.Sprint(ctx, full) {
		t.Error("epochs 0 and 1 built the same batch: splits and masks are not redrawn")
	}

	// Too long for max_length: the oldest tokens go, [CLS] and the newest tokens stay.
	d.maxLen = 6
	seq := d.sequence([][]int32{{10, 11, 12}, {13, 14, 15}})
	if fmt.Sprint(seq) != fmt.Sprint([]int64{d.cls, 12, 13, 14, 15, d.sep}) {
		t.Errorf("left truncation to 6 gave %v", seq)
	}
}

func equalIDs(a, b []int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func sum(xs []int64) int {
	s := 0
	for _, x := range xs {
		s += int(x)
	}
	return s
}

// ints reads an int64 [B,T] tensor into rows.
func ints(t *testing.T, x interface {
	MustSize() []int64
	Int64Values(...bool) []int64
}) [][]int64 {
	t.Helper()
	size := x.MustSize()
	v := x.Int64Values()
	out := make([][]int64, size[0])
	for i := range out {
		out[i] = v[int64(i)*size[1] : int64(i+1)*size[1]]
	}
	return out
}
