package trainer

import (
	"fmt"
	"time"

	"convrep/datasets"
	"convrep/experiment"
	"convrep/objectives"
)

// dryRunReadBytes bounds the data a dry run reads, corpora and files together: what it reads in seconds (the
// files of turns read at about 15 MB/s, twice under data.skip_bad). Above it the dry run says that it did not
// read them; `convrep data check EXPERIMENT.toml` reads files of any size. A variable for the tests.
var dryRunReadBytes int64 = 64 << 20

// dataPlan is what a dry run learns by reading the data the run will read, as the run reads it.
type dataPlan struct {
	took      time.Duration
	dialogues int
	bad       datasets.BadRecords
	// held is the number of dialogues train.valid_share holds out; split is the hold-out's own failure.
	held  int
	split error
	// pairs counts each side's examples (train, valid), for an objective whose examples come of the dialogues
	// alone (objectives.DialogueExamples: DSE's pairs); false for the others, whose examples come of tokens and
	// are counted when the run builds them.
	pairs        bool
	train, valid int
}

// readPlan reads the experiment's corpora and files, skipping and noting malformed records whatever
// data.skip_bad says, splits them as train.valid_share does (objectives.Holdout: the streamed rule for files
// alone, round(share·n) chosen from the whole list otherwise) and counts each side's examples where the
// objective makes them of the dialogues alone (DSE's pairs).
func readPlan(e *experiment.Experiment) (*dataPlan, error) {
	start := time.Now()
	p := &dataPlan{}
	var train, valid func(datasets.Dialogue) int
	if cfg, err := objectives.Parse(e.Objective); err == nil {
		if c, ok := cfg.(objectives.DialogueExamples); ok {
			env := objectives.DataEnv{Pairs: e.Data.Pairs, MinWords: e.Data.MinWords, BothDirections: e.Data.BothDirections}
			if train, err = c.ExampleCounter(env); err != nil {
				return nil, err
			}
			if valid, err = c.ExampleCounter(env); err != nil {
				return nil, err
			}
			p.pairs = true
		}
	}
	count := func(d datasets.Dialogue, heldOut bool) {
		if !p.pairs {
			return
		}
		if heldOut {
			p.valid += valid(d)
		} else {
			p.train += train(d)
		}
	}
	share, seed := e.Train.ValidShare, e.Seed
	opt := datasets.ReadOptions{SkipBad: true, Bad: p.bad.Add, MergeSameSpeaker: e.Data.MergeSameSpeaker,
		MetaLWOZMultiWOZ: e.Data.MetaLWOZMultiWOZ}
	if fs := e.Data.FileSet(); fs != nil && len(e.Data.Corpora) == 0 {
		// Files alone stream, and the hold-out decides each dialogue as it comes.
		err := fs.EachDialogue(opt, func(_ string, d datasets.Dialogue) error {
			p.dialogues++
			out := share > 0 && objectives.HeldOutStreamed(objectives.DialogueKey(d), share, seed)
			if out {
				p.held++
			}
			count(d, out)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if share > 0 && (p.held == 0 || p.held == p.dialogues) {
			p.split = fmt.Errorf("train.valid_share %g of %d dialogues held out %d: none left to validate on or none to train on", share, p.dialogues, p.held)
		}
	} else {
		opt.Files = e.Data.FileSet()
		ds, err := datasets.ReadAll(e.Data.Root, e.Data.Corpora, opt)
		if err != nil {
			return nil, err
		}
		p.dialogues = len(ds)
		held := map[string]bool{}
		if share > 0 {
			if held, p.split = objectives.HeldOut(ds, share, seed); p.split != nil {
				held = map[string]bool{}
			}
			p.held = len(held)
		}
		for _, d := range ds {
			count(d, held[objectives.DialogueKey(d)])
		}
	}
	if e.Data.MaxExamples > 0 {
		p.train = min(p.train, e.Data.MaxExamples)
	}
	p.took = time.Since(start)
	return p, nil
}

// problems are what a real run would stop on that the plan shows, each with the setting that fixes it.
func (p *dataPlan) problems(e *experiment.Experiment, world int) []string {
	var out []string
	tc := e.Train
	if p.bad.Count > 0 && !e.Data.SkipBad {
		out = append(out, fmt.Sprintf("%d malformed records (listed above): the run stops at the first; fix them, or set data.skip_bad = true to skip each with its dialogue", p.bad.Count))
	}
	if p.split != nil {
		out = append(out, fmt.Sprintf("%v: change train.valid_share, or set train.valid_share = 0 and train.eval_every = 0 to validate on none", p.split))
	}
	if !p.pairs {
		return out
	}
	if tc.ValidShare > 0 && p.split == nil {
		if err := validationFits(tc, p.held, p.valid); err != nil {
			out = append(out, fmt.Sprintf("%v: raise train.valid_share, lower train.batch_size to %d or less, or set train.valid_share = 0 and train.eval_every = 0",
				err, max(1, p.valid)))
		}
	}
	if _, _, err := runSteps(p.train, world, tc); err != nil {
		out = append(out, fmt.Sprintf("%v: lower train.batch_size (or train.grad_accumulation), or give more data", err))
	}
	return out
}
