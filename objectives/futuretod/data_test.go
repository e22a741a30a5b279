package futuretod

import (
	"fmt"
	"testing"

	"github.com/sugarme/gotch"
	"go.uber.org/zap/zaptest"

	"convrep/datasets"
	"convrep/internal/shared"
	"convrep/objectives"
	"convrep/objectives/inputs"
	"convrep/objectives/internal/testutil"
	"convrep/tokenizers"
)

// The data side: utterances tokenised one by one join into exactly what the tokenizer makes of the flattened
// dialogue; the student's context is the start of the teacher's input; labels sit on non-special tokens
// only; batches repeat within an epoch and change across epochs.
func TestFutureTODData(t *testing.T) {
	tokDir := shared.MustPath(t, "data", "vocab", "bert-base-uncased")
	tok, err := tokenizers.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	tok.AddSpecialTokens(testutil.RequirementsOf(Name).SpecialTokens...)
	cfg, err := Parse(objectives.Settings{"max_future": int64(2), "top_k_layers": int64(2)})
	if err != nil {
		t.Fatal(err)
	}
	env := objectives.DataEnv{Root: shared.MustPath(t, "data", "pretrain"), Corpora: []string{"woz2"}, MaxExamples: 64, Seed: 11,
		Tok: tok, TokDir: tokDir, MaxLength: 512, Log: zaptest.NewLogger(t)}
	ds, err := newFutureTODData(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := ds.(*futureTODData)
	dialogues, err := env.ReadDialogues()
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
	batch := func(epoch int) Batch {
		d.SetEpoch(epoch)
		b, err := d.Batch(idx, gotch.CPU)
		if err != nil {
			t.Fatal(err)
		}
		return b.Value.(Batch)
	}
	b0 := batch(0)
	ctx, full := ints(t, b0.Context.IDs), ints(t, b0.Full.IDs)
	labels, cmask, fmask := testutil.LabelRows(t, b0.Labels), ints(t, b0.Context.Mask), ints(t, b0.Full.Mask)
	chosen := 0
	for i := range ctx {
		n, nf := testutil.Sum(cmask[i]), testutil.Sum(fmask[i])
		if nf <= n {
			t.Errorf("row %d: the teacher's input (%d tokens) is not longer than the context (%d)", i, nf, n)
		}
		for k := 0; k < len(ctx[i]); k++ {
			orig := ctx[i][k]
			if labels[i][k] != inputs.IgnoreLabel {
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
	// teacher_input = "context_first": the student's context as the student reads it, then the future as far
	// as it fits.
	d.maxLen = 7
	for _, c := range []struct {
		ctx    []int64
		future [][]int32
		want   []int64
	}{
		{[]int64{d.cls, 11, 12, d.sep}, [][]int32{{13, 14}, {15, 16}}, []int64{d.cls, 11, 12, 13, 14, 15, d.sep}},
		{[]int64{d.cls, 11, 12, d.sep}, [][]int32{{13}}, []int64{d.cls, 11, 12, 13, d.sep}},
		{[]int64{d.cls, 11, 12, 13, 14, 15, d.sep}, [][]int32{{16}}, []int64{d.cls, 11, 12, 13, 14, 15, d.sep}},
	} {
		if got := d.extend(c.ctx, c.future); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("extend(%v, %v) = %v, want %v", c.ctx, c.future, got, c.want)
		}
	}
}

// At 64 tokens the newest-tokens teacher input loses the student's context in long dialogues; with
// teacher_input = "context_first" every teacher input starts with the student's whole (unmasked) context.
func TestTeacherKeepsTheStudentsContext(t *testing.T) {
	tokDir := shared.MustPath(t, "data", "vocab", "bert-base-uncased")
	tok, err := tokenizers.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	tok.AddSpecialTokens(testutil.RequirementsOf(Name).SpecialTokens...)
	lost := map[TeacherInput]int{}
	for _, input := range []TeacherInput{TeacherNewest, TeacherContextFirst} {
		cfg, err := Parse(objectives.Settings{"teacher_input": string(input)})
		if err != nil {
			t.Fatal(err)
		}
		env := objectives.DataEnv{Root: shared.MustPath(t, "data", "pretrain"), Corpora: []string{"woz2"}, MaxExamples: 64, Seed: 11,
			Tok: tok, TokDir: tokDir, MaxLength: 64, Log: zaptest.NewLogger(t)}
		ds, err := newFutureTODData(env, cfg)
		if err != nil {
			t.Fatal(err)
		}
		d := ds.(*futureTODData)
		for j := range d.utts {
			_, labels, full := d.example(j)
			ctx, _, _ := d.example(j)
			for k := range ctx {
				if labels[k] != inputs.IgnoreLabel {
					ctx[k] = labels[k] // the context as it was before masking
				}
			}
			if len(full) > 64 {
				t.Fatalf("%s: dialogue %d: teacher input of %d tokens", input, j, len(full))
			}
			if len(full) < len(ctx) || !equalIDs(ctx[:len(ctx)-1], full[:len(ctx)-1]) {
				lost[input]++
			}
		}
	}
	if lost[TeacherContextFirst] != 0 {
		t.Errorf("context_first: %d of 64 teacher inputs do not start with the student's context", lost[TeacherContextFirst])
	}
	if lost[TeacherNewest] == 0 {
		t.Errorf("newest: every teacher input starts with the student's context at 64 tokens; the test shows nothing")
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
