package mlm

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/objectives"
	"convrep/objectives/inputs"
	"convrep/tokenizers"
)

// mlmDialogues is the masked-LM dataset. Each dialogue is flattened as [CLS] [USR] u1 [SYS] s1 ... [SEP]
// (datasets.FlattenTurns, tokenised turn by turn) and masked when batched from a random source of (seed,
// epoch, example): dynamic masking that a resumed run repeats exactly.
//
// A dialogue longer than model.max_length is, by default (long_dialogues = "windows"), cut into windows of
// max_length tokens that tile it, one example each, so that every token of it can be masked, not only its
// opening. TOD-BERT's pipeline builds one example per turn, the dialogue up to that turn
// (utils/utils_*.py, read_langs_turn), each cut from the left to the model's length
// (utils/dataloader_usdl.py, Dataset_usdl.preprocess: [CLS] + tokens[-max_length+1:]); its windows end at
// every turn and together reach every token (of a turn shorter than max_length). Tiling reaches every token once per epoch at a cost of one
// example per max_length tokens instead of one per turn. The tiling of a dialogue is moved each epoch by a
// shift drawn from (seed, epoch, dialogue), so window borders fall elsewhere each epoch and a resumed run
// draws the same ones; the number of windows, and so the examples, stays the same.
//
// long_dialogues = "truncate" keeps one example per dialogue cut once by model.truncation: "left" keeps
// its end, which is what TOD-BERT's released MLM run does (run_tod_lm_pretraining.sh passes
// --only_last_turn, so each dialogue gives only its last example, cut as above).
type mlmDialogues struct {
	toks    *datasets.DialogueTokens
	mask    MaskOptions
	maxLen  int
	keepEnd bool
	seed    int64
	epoch   int
	pad     int64

	tile  bool
	room  int   // body tokens per window: maxLen − 2 ([CLS], [SEP]); 0: no limit
	body  []int // dialogue → its body length
	first []int // dialogue → its first example; first[Len dialogues] is the number of examples
}

// Long-dialogue modes (the long_dialogues setting).
const (
	LongWindows  = "windows"
	LongTruncate = "truncate"
)

func newMLMDialogues(env objectives.DataEnv, cfg Config) (objectives.Dataset, error) {
	opt, err := MaskOptionsFor(env.Tok, cfg.MaskProb)
	if err != nil {
		return nil, err
	}
	if cfg.LongDialogues == LongWindows && env.MaxLength > 0 && env.MaxLength < 3 {
		return nil, fmt.Errorf("[objective] long_dialogues = %q: model.max_length %d leaves no token between [CLS] and [SEP]", LongWindows, env.MaxLength)
	}
	dt, err := objectives.ReadDialogueTokens(env, func(d datasets.Dialogue) bool { return len(d.Turns) > 0 })
	if err != nil {
		return nil, err
	}
	d := newDialogueExamples(dt, opt, env.MaxLength, env.Truncation == tokenizers.TruncateLeft, cfg.LongDialogues == LongWindows, env.Seed)
	d.pad = env.Tok.PadID()
	env.Logger().Info("mlm examples ready", zap.Int("dialogues", dt.Len()), zap.Int("examples", d.Len()),
		zap.String("long_dialogues", cfg.LongDialogues))
	return d, nil
}

// newDialogueExamples lays out the examples: with tile, WindowCount of them per dialogue, else one.
func newDialogueExamples(dt *datasets.DialogueTokens, opt MaskOptions, maxLen int, keepEnd, tile bool, seed int64) *mlmDialogues {
	d := &mlmDialogues{toks: dt, mask: opt, maxLen: maxLen, keepEnd: keepEnd, seed: seed, tile: tile,
		room: max(maxLen-2, 0), body: make([]int, dt.Len()), first: make([]int, dt.Len()+1)}
	for i := range dt.Len() {
		d.body[i] = dt.BodyLen(i)
		n := 1
		if tile {
			n = datasets.WindowCount(d.body[i], d.room)
		}
		d.first[i+1] = d.first[i] + n
	}
	return d
}

func (d *mlmDialogues) Len() int { return d.first[len(d.first)-1] }

func (d *mlmDialogues) SetEpoch(epoch int) { d.epoch = epoch }

// row is the unmasked ids of example e in the current epoch.
func (d *mlmDialogues) row(e int) []int64 {
	i := sort.Search(len(d.first)-1, func(i int) bool { return d.first[i+1] > e }) // the dialogue holding e
	if !d.tile {
		return d.toks.Span(i, 0, len(d.toks.Turns[i]), d.maxLen, d.keepEnd)
	}
	n, k := d.body[i], d.first[i+1]-d.first[i]
	shift := 0
	if slack := k*d.room - n; k > 1 && slack > 0 {
		shift = WindowRand(d.seed, d.epoch, i).IntN(slack + 1)
	}
	return d.toks.Window(i, datasets.WindowStart(n, d.room, e-d.first[i], shift), d.room)
}

func (d *mlmDialogues) Batch(idx []int, dev gotch.Device) (objectives.Batch, error) {
	rows, labels := make([][]int64, len(idx)), make([][]int64, len(idx))
	for k, e := range idx {
		if e < 0 || e >= d.Len() {
			return objectives.Batch{}, fmt.Errorf("mlm batch: example %d of %d", e, d.Len())
		}
		ids := d.row(e)
		rows[k], labels[k] = MaskRow(ids, len(ids), d.mask, ExampleRand(d.seed, d.epoch, e))
	}
	in, err := inputs.InputOf(rows, d.pad, dev)
	if err != nil {
		return objectives.Batch{}, err
	}
	lab, err := inputs.LabelsOf(labels, dev)
	if err != nil {
		in.Drop()
		return objectives.Batch{}, err
	}
	return objectives.Batch{Value: Batch{Input: in, Labels: lab}, Drop: func() { in.Drop(); lab.Drop() }}, nil
}

// WindowRand is the random source of a dialogue's window shift in an epoch: a function of the experiment's
// seed, the epoch and the dialogue only (a stream apart from ExampleRand's), so a resumed run cuts every
// dialogue as the first run did.
func WindowRand(seed int64, epoch, dialogue int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^0x6d6c6d5f77696e64, uint64(epoch)<<32^uint64(dialogue)))
}
