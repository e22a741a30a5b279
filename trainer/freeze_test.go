package trainer_test

import (
	"testing"

	"convrep/objectives"
	"convrep/trainer"
	"convrep/trainer/trainertest"
)

// dialogueCSE is DialogueCSE on a tiny random 3-layer BERT (the bottom layer frozen with the embeddings) and
// woz2's dialogues.
var dialogueCSE = trainertest.Tiny{
	Name:      "tiny-dialoguecse",
	Seed:      11,
	Layers:    3,
	Dropout:   0.1,
	Data:      "merge_same_speaker = true\nmax_examples = 480",
	Objective: "name = \"dialoguecse\"\ntemperature = 0.1\naggregation = \"attention\"\nnegatives = 4\ncontext_turns = 2\nfreeze_layers = 1",
	Train:     "batch_size = 8\nmax_steps = 30\nlr = 1e-3\nhead_lr = 1e-3\ncheckpoint_every = 3\nlog_every = 1\nthreads = 1",
}

// DialogueCSE freezes its bottom layers (freeze_layers = 1): the embeddings and layer 0 are in the checkpoints
// but in no optimiser group, and do not move; layers 1-2 and I1's FFN do.
func TestDialogueCSEFreezes(t *testing.T) {
	dir := t.TempDir()
	tr, err := trainertest.New(t, dialogueCSE.Write(t, dir), []string{"train.max_steps=4"}, false)
	if err != nil {
		t.Fatal(err)
	}
	frozen := map[string]bool{}
	for _, g := range tr.Objective().Groups() {
		for _, name := range g.Params {
			if g.Rate == objectives.Frozen {
				frozen[name] = true
			}
		}
	}
	for _, name := range []string{"bert.embeddings.word_embeddings.weight", "bert.embeddings.LayerNorm.bias",
		"bert.encoder.layer.0.attention.self.query.weight", "bert.encoder.layer.0.output.dense.bias"} {
		if !frozen[name] {
			t.Errorf("%s is not frozen", name)
		}
	}
	if frozen["bert.encoder.layer.1.attention.self.query.weight"] || len(frozen) == 0 {
		t.Fatalf("frozen: %v", frozen)
	}
	inGroup := map[string]bool{}
	for _, g := range tr.Groups() {
		for _, n := range g.ParamNames {
			inGroup[n] = true
		}
	}
	for name := range frozen {
		if inGroup[name] {
			t.Errorf("frozen %s is in an optimiser group", name)
		}
		if tr.Params()[name] == nil {
			t.Errorf("frozen %s is not checkpointed", name)
		}
	}
	for _, name := range []string{"bert.encoder.layer.1.attention.self.query.weight", "bert.encoder.layer.2.output.dense.bias", "dialoguecse_attention.0.weight"} {
		if !inGroup[name] {
			t.Errorf("%s is in no optimiser group", name)
		}
	}
	before := map[string][]float64{}
	for name, p := range tr.Params() {
		before[name] = p.Float64Values()
	}
	if err := tr.Run(t.Context(), trainer.Options{}); err != nil {
		t.Fatal(err)
	}
	for name, p := range tr.Params() {
		// I1's last bias gets no gradient: a softmax does not change when every score shifts alike.
		moved := maxAbsDiff(p.Float64Values(), before[name]) > 0
		if moved == frozen[name] && name != "dialoguecse_attention.2.bias" {
			t.Errorf("%s: moved %v, frozen %v", name, moved, frozen[name])
		}
	}
}

func maxAbsDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return 1
	}
	d := 0.0
	for i := range a {
		d = max(d, a[i]-b[i], b[i]-a[i])
	}
	return d
}
