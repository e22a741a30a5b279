package finetune

import (
	"testing"

	"convrep/models"
)

// The defaults are the papers' numbers, written out here from the texts (papers in /work/shared/papers)
// and TOD-BERT's code (github jasonwu0731/ToD-BERT), not from protocol.go's table.
func TestDefaultsAreThePapers(t *testing.T) {
	for _, c := range []struct {
		paper, task string
		want        Protocol
		from        string
	}{
		{PaperDSE, TaskActs, Protocol{Epochs: 100, BatchSize: 32, LR: 5e-5, EvalEvery: 30, Patience: 10, MaxLength: 32, Dropout: 0.2},
			"DSE App. B.1 Dialogue Action Prediction: 100 epochs, batch 32, lr 5e-05, every 30 steps, max length 32, dropout 0.2"},
		{PaperDSE, TaskIntent, Protocol{Epochs: 50, BatchSize: 16, LR: 3e-5, EvalEvery: 10, Patience: 10, MaxLength: 64, Dropout: 0.1},
			"DSE App. B.1 Intent Classification: 50 epochs, batch 16, lr 3e-05, every 10 steps, max length 64, dropout 0.1"},
		{PaperDSE, TaskResponse, Protocol{Epochs: 50, BatchSize: 100, LR: 3e-5, EvalEvery: 10, Patience: 10, MaxLength: 128},
			"DSE App. B.1 Utterance-level Response Selection: max length 128, batch 100, other settings as intent"},
		{PaperFutureTOD, TaskActs, Protocol{Epochs: 50, BatchSize: 16, LR: 5e-5, EvalEvery: 50, Patience: 10, Pooling: models.CLS},
			"FutureTOD App. B: 50 epochs, every 50 steps, patience 10, batch 16 for dialogue act prediction; §3.2 [CLS]; " +
				"TOD-BERT evaluation_pipeline.sh --learning_rate=5e-5, config.py max_seq_length 512"},
		{PaperFutureTOD, TaskIntent, Protocol{Epochs: 50, BatchSize: 8, LR: 5e-5, EvalEvery: 50, Patience: 10, Pooling: models.CLS},
			"FutureTOD App. B: batch 8 for intent recognition"},
		{PaperFutureTOD, TaskResponse, Protocol{Epochs: 50, BatchSize: 100, LR: 5e-5, EvalEvery: 50, Patience: 10, Pooling: models.CLS},
			"FutureTOD App. B: batch 100 for response selection"},
	} {
		got, err := Defaults(c.paper, c.task)
		if err != nil {
			t.Fatalf("%s %s: %v", c.paper, c.task, err)
		}
		if got.Source == "" {
			t.Errorf("%s %s: no source", c.paper, c.task)
		}
		got.Source = ""
		if got != c.want {
			t.Errorf("%s %s: %+v, want %+v (%s)", c.paper, c.task, got, c.want, c.from)
		}
	}
	if _, err := Defaults("bert", TaskActs); err == nil {
		t.Error("an unknown paper accepted")
	}
	if _, err := Defaults(PaperDSE, "dst"); err == nil {
		t.Error("an unknown task accepted")
	}
}
