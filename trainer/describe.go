package trainer

import (
	"os"
	"path/filepath"

	"convrep/modelcard"
	"convrep/models/sbert"
	"convrep/objectives"
	"convrep/rundir"
)

// describeModel makes the saved model folder dir a sentence-transformers model too, embedding as the
// objective trains and evaluates (its pooling and normalisation), and writes its model card.
func (t *Trainer) describeModel(dir string) error {
	e := t.exp
	pooling, normalize := objectives.EmbeddingOf(t.obj)
	layout := sbert.Layout{Pooling: pooling, Normalize: normalize, MaxSeqLength: e.Model.MaxLength,
		Dim: t.bb.Model.Config.HiddenSize}
	if err := sbert.Write(dir, layout); err != nil {
		return err
	}
	src, err := os.ReadFile(e.Path())
	if err != nil {
		return err
	}
	card := modelcard.Card{Name: e.Name, ExperimentFile: e.Path(), Experiment: string(src), Objective: t.obj.Name(),
		Datasets: e.Data.Corpora, Files: e.Data.Files, Examples: t.data.Len(), Steps: t.pos.Step, FinalLoss: t.win.lastLoss,
		Pooling: string(pooling), Normalize: normalize, MaxLength: e.Model.MaxLength}
	if p, ok := objectives.PaperOf(t.obj.Name()); ok {
		card.Paper = p.Title + ", " + p.Venue
	}
	if e.Model.Random == nil && t.bb.ModelDir != e.Model.Backbone {
		card.BaseModel = e.Model.Backbone // a hub name, resolved into the cache
	}
	return card.Write(dir)
}

// describeRun writes the run folder's README: what is where and the commands that resume, evaluate and
// embed with it.
func (t *Trainer) describeRun(done bool) error {
	paths, err := rundir.At(t.exp.OutputDir).Checkpoints()
	if err != nil {
		return err
	}
	r := modelcard.Run{Name: t.exp.Name, ExperimentFile: t.exp.Path(), OutputDir: t.exp.OutputDir, Done: done}
	for _, p := range paths {
		r.Checkpoints = append(r.Checkpoints, filepath.Base(p))
	}
	if t.exp.WritesTensorBoard() {
		events, err := EventFile(t.exp.OutputDir)
		if err != nil {
			return err
		}
		if events != "" {
			r.EventFile = filepath.Base(events)
		}
	}
	return r.Write(t.exp.OutputDir)
}
