package futuretod

import (
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/inputs"
	"convrep/objectives/mlm"
	"convrep/tokenizers"
)

// futureTODData is FutureTOD's dataset: one example per dialogue of at least two utterances, each utterance
// tokenised once as "[USR] text" or "[SYS] text" (datasets.FlattenTurns). The split into context and future
// (SplitDialogue) and the MLM masking of the context are drawn afresh for every epoch, from a
// random source that depends only on (seed, epoch, dialogue index), so a resumed run builds the same batches.
//
// Sequences are [CLS] utterances [SEP], as the tokenizer writes a flattened dialogue. One longer than the
// maximum length loses its oldest tokens (left truncation whatever model.truncation says): the teacher's
// input must keep the future utterances it ends with, and the student's the turns just before the split.
// With teacher_input = "context_first" the teacher's input is instead the student's context, cut as the
// student's is, followed by the future cut at its end.
type futureTODData struct {
	utts    [][][]int32 // per dialogue, per utterance: its ids, role token first, without [CLS] / [SEP]
	user    [][]bool    // per dialogue, per utterance: spoken by the user
	future  FutureLength
	teacher TeacherInput
	mask    mlm.MaskOptions
	maxLen  int
	seed    int64
	epoch   int

	cls, sep, pad int64
}

func newFutureTODData(env objectives.DataEnv, opt Config) (objectives.Dataset, error) {
	if env.MaxLength < 4 {
		return nil, fmt.Errorf("model.max_length = %d: FutureTOD needs room for [CLS], a role token, a word and [SEP]", env.MaxLength)
	}
	tok := env.Tok
	d := &futureTODData{future: opt.Future, teacher: opt.TeacherInput, maxLen: env.MaxLength, seed: env.Seed, pad: tok.PadID()}
	var ok bool
	if d.cls, d.sep, ok = futureTODBoundaries(tok); !ok {
		return nil, fmt.Errorf("model.tokenizer: FutureTOD needs a tokenizer with a [CLS] and a [SEP] token")
	}
	var err error
	if d.mask, err = mlm.MaskOptionsFor(tok, opt.MaskProb); err != nil {
		return nil, fmt.Errorf("futuretod %w", err)
	}

	ds, err := env.ReadDialogues()
	if err != nil {
		return nil, err
	}
	var kept []datasets.Dialogue
	for _, dl := range ds {
		if len(dl.Turns) >= 2 { // a dialogue of one utterance has no future
			kept = append(kept, dl)
		}
	}
	if env.MaxExamples > 0 && len(kept) > env.MaxExamples {
		// A random subset, the same for every run of this seed, kept in corpus order.
		pick := datasets.Order(len(kept), env.Seed, 0)[:env.MaxExamples]
		sort.Ints(pick)
		sub := make([]datasets.Dialogue, len(pick))
		for i, j := range pick {
			sub[i] = kept[j]
		}
		kept = sub
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("data.corpora: no dialogue of two utterances or more")
	}
	if d.utts, err = futureTODTokenize(kept, tok, runtime.NumCPU()); err != nil {
		return nil, err
	}
	d.user = make([][]bool, len(kept))
	utterances, tokens := 0, 0
	for i, dl := range kept {
		d.user[i] = make([]bool, len(dl.Turns))
		for j, t := range dl.Turns {
			d.user[i][j] = t.Speaker == datasets.User
			tokens += len(d.utts[i][j])
		}
		utterances += len(dl.Turns)
	}
	env.Logger().Info("futuretod dialogues ready", zap.Int("dialogues", len(kept)), zap.Int("read", len(ds)), zap.Int("utterances", utterances),
		zap.Float64("tokens_per_utterance", float64(tokens)/float64(utterances)), zap.Stringer("max_future", opt.Future))
	return d, nil
}

// futureTODBoundaries finds the ids the tokenizer puts around a single text ([CLS] … [SEP], <s> … </s>).
func futureTODBoundaries(tok *tokenizers.Tokenizer) (cls, sep int64, ok bool) {
	c, ok1 := tok.SpecialToken("cls_token")
	s, ok2 := tok.SpecialToken("sep_token")
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	cls, ok1 = tok.TokenID(c)
	sep, ok2 = tok.TokenID(s)
	return cls, sep, ok1 && ok2
}

// futureTODTokenize encodes every utterance as FlattenTurns writes it in a dialogue, "[USR] text", and keeps
// the ids between the [CLS] and [SEP] the tokenizer adds. Every utterance but a dialogue's first is encoded
// after a space, as it follows one in the flattened text (it matters to byte-level BPE only). workers
// goroutines share the dialogues.
func futureTODTokenize(ds []datasets.Dialogue, tok *tokenizers.Tokenizer, workers int) ([][][]int32, error) {
	out := make([][][]int32, len(ds))
	errs := make([]error, max(workers, 1))
	var wg sync.WaitGroup
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(ds); i += len(errs) {
				dl := ds[i]
				out[i] = make([][]int32, len(dl.Turns))
				for j, t := range dl.Turns {
					text := datasets.FlattenTurns([]datasets.Turn{t}, datasets.FlattenOptions{})
					if j > 0 {
						text = " " + text
					}
					ids, err := tok.Encode(text)
					if err != nil {
						errs[w] = fmt.Errorf("tokenize %s dialogue %s utterance %d: %w", dl.Corpus, dl.ID, j, err)
						return
					}
					if len(ids) < 2 {
						errs[w] = fmt.Errorf("tokenize %s dialogue %s utterance %d: %d ids, want [CLS] … [SEP]", dl.Corpus, dl.ID, j, len(ids))
						return
					}
					row := make([]int32, len(ids)-2)
					for k, id := range ids[1 : len(ids)-1] {
						row[k] = int32(id)
					}
					out[i][j] = row
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (d *futureTODData) Len() int { return len(d.utts) }

// SetEpoch makes the splits and masks of the epoch's batches (EpochAware).
func (d *futureTODData) SetEpoch(epoch int) { d.epoch = epoch }

// example draws dialogue j's split and mask for the current epoch: the student's masked context with its
// labels, and the teacher's context and future.
func (d *futureTODData) example(j int) (context, labels, full []int64) {
	g := mlm.ExampleRand(d.seed, d.epoch, j)
	c, f, _ := SplitDialogue(d.user[j], d.future, g) // every kept dialogue has two utterances
	ctx := d.sequence(d.utts[j][:c])
	context, labels = mlm.MaskRow(ctx, len(ctx), d.mask, g)
	if d.teacher == TeacherContextFirst {
		return context, labels, d.extend(ctx, d.utts[j][c:c+f])
	}
	return context, labels, d.sequence(d.utts[j][:c+f])
}

// extend is the sequence ctx ([CLS] … [SEP]) with the future utterances put before its [SEP], as many of
// their tokens as fit in the maximum length: the future loses its end, the context nothing.
func (d *futureTODData) extend(ctx []int64, future [][]int32) []int64 {
	seq := append(make([]int64, 0, d.maxLen), ctx[:len(ctx)-1]...)
	for _, u := range future {
		for _, id := range u {
			if len(seq) == d.maxLen-1 {
				return append(seq, d.sep)
			}
			seq = append(seq, int64(id))
		}
	}
	return append(seq, d.sep)
}

// sequence is [CLS] + the utterances + [SEP], keeping the newest tokens when it is too long.
func (d *futureTODData) sequence(utts [][]int32) []int64 {
	n := 0
	for _, u := range utts {
		n += len(u)
	}
	skip := max(0, n-(d.maxLen-2))
	seq := make([]int64, 0, min(n, d.maxLen-2)+2)
	seq = append(seq, d.cls)
	for _, u := range utts {
		for _, id := range u {
			if skip > 0 {
				skip--
				continue
			}
			seq = append(seq, int64(id))
		}
	}
	return append(seq, d.sep)
}

func (d *futureTODData) Batch(idx []int, dev gotch.Device) (objectives.Batch, error) {
	ctx, labels, full := make([][]int64, len(idx)), make([][]int64, len(idx)), make([][]int64, len(idx))
	for i, j := range idx {
		if j < 0 || j >= len(d.utts) {
			return objectives.Batch{}, fmt.Errorf("futuretod batch: example %d of %d", j, len(d.utts))
		}
		ctx[i], labels[i], full[i] = d.example(j)
	}
	context, err := models.BatchInput(inputs.Padded(ctx, d.pad), dev)
	if err != nil {
		return objectives.Batch{}, err
	}
	teacher, err := models.BatchInput(inputs.Padded(full, d.pad), dev)
	if err != nil {
		context.Drop()
		return objectives.Batch{}, err
	}
	lab, err := inputs.LabelsOf(labels, dev) // as wide as the context: one label per token
	if err != nil {
		context.Drop()
		teacher.Drop()
		return objectives.Batch{}, err
	}
	b := Batch{Context: context, Labels: lab, Full: teacher}
	return objectives.Batch{Value: b, Drop: func() { context.Drop(); teacher.Drop(); lab.Drop() }}, nil
}
