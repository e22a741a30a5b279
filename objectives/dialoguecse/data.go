package dialoguecse

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/inputs"
	"convrep/tokenizers"
)

// cseExamples is DialogueCSE's dataset (§3): every utterance of a dialogue is a response r, its context C
// context_turns utterances around it in all (contextWindows). Utterances are tokenised once, each on its own
// ([CLS] u [SEP], truncated to model.max_length), as the encoder reads them one by one (§4.1).
//
// The negatives of an example are responses of other examples of the same batch. A batch is a random draw
// of examples from the whole corpus, so these are responses "sampled from a dialogue randomly selected
// from D" (§3), and encoding them costs nothing more: each is some example's response already. Responses of
// the example's own dialogue are left out (they can sit in its context); only when too few others are in
// the batch are they used to make up the number. Which of the batch's responses an example gets is drawn
// from (experiment seed, the batch's example indices), so a resumed run draws the same ones.
type cseExamples struct {
	utts      [][]int32 // every utterance of the kept dialogues, tokenised
	dialogue  []int32   // the dialogue number of each utterance
	examples  []cseExample
	pad       int64
	negatives int
	seed      int64
}

// cseExample is a response and its context, as utterance numbers.
type cseExample struct {
	resp    int32
	context []int32
}

func newCSEExamples(env objectives.DataEnv, cfg Config) (objectives.Dataset, error) {
	if b := env.RankBatch(); cfg.Negatives > b-1 {
		return nil, fmt.Errorf("[objective] negatives = %d: the negatives are the other responses of the batch (of each rank's share of it), so that must hold at least %d, not %d (train.batch_size %d over %d ranks)",
			cfg.Negatives, cfg.Negatives+1, b, env.BatchSize, max(env.Ranks, 1))
	}
	ds, err := env.ReadDialogues()
	if err != nil {
		return nil, err
	}
	d := &cseExamples{pad: env.Tok.PadID(), negatives: cfg.Negatives, seed: env.Seed}
	var texts []string
	kept := keptDialogues(ds, cfg.MinTurns)
	for num, dl := range kept {
		d.examples = append(d.examples, contextWindows(int32(len(texts)), len(dl.Turns), cfg.ContextTurns)...)
		for _, t := range dl.Turns {
			texts = append(texts, t.Text)
			d.dialogue = append(d.dialogue, int32(num))
		}
	}
	if len(d.examples) == 0 {
		return nil, fmt.Errorf("data: no dialogue of %d turns or more in %v", cfg.MinTurns, env.Corpora)
	}
	if env.MaxExamples > 0 && len(d.examples) > env.MaxExamples {
		g := rand.New(rand.NewPCG(uint64(env.Seed), 0x64637365)) // a random subset, the same for every run of this seed
		g.Shuffle(len(d.examples), func(i, j int) { d.examples[i], d.examples[j] = d.examples[j], d.examples[i] })
		d.examples = d.examples[:env.MaxExamples]
	}
	if d.utts, err = tokenizeUtterances(texts, env.Tok, env.MaxLength, env.Truncation); err != nil {
		return nil, err
	}
	env.Logger().Info("dialoguecse examples ready", zap.Int("dialogues", len(kept)), zap.Int("utterances", len(texts)),
		zap.Int("examples", len(d.examples)), zap.Int("context_turns", cfg.ContextTurns), zap.Int("negatives", cfg.Negatives))
	return d, nil
}

// contextWindows makes every turn of a dialogue of n turns, numbered from first on, a response r whose
// context C is w turns in total, taken around it. DialogueCSE §5.3 sets "the number of context turns" to 3,
// and §4.2 refines r once per utterance of C, "t − 1 refined embedding matrices" for a session S of t turns:
// C is S without r, so it holds w turns, not w on each side (Fig. 2: performance rises up to about 3 turns
// and falls past it). §3 writes S = {u1, …, uk−1, r, uk+1, …, ut} and C as "the bi-directional context
// around r": turns on both sides of r, consecutive with it. The paper does not say how the w turns divide
// between the sides; here S is the run of w+1 consecutive turns holding r with r as near its middle as the
// dialogue allows, the odd turn going before r (the side a response answers): for w = 3, two turns before
// and one after. Near the dialogue's start or end the run shifts so that C keeps w turns; a dialogue of w
// turns or fewer gives all its other turns.
func contextWindows(first int32, n, w int) []cseExample {
	out := make([]cseExample, n)
	for k := range n {
		out[k].resp = first + int32(k)
		start := min(max(0, k-(w+1)/2), max(0, n-(w+1)))
		for c := start; c < min(n, start+w+1); c++ {
			if c != k {
				out[k].context = append(out[k].context, first+int32(c))
			}
		}
	}
	return out
}

// keptDialogues are the dialogues of at least minTurns turns, in order.
func keptDialogues(ds []datasets.Dialogue, minTurns int) []datasets.Dialogue {
	var out []datasets.Dialogue
	for _, d := range ds {
		if len(d.Turns) >= minTurns {
			out = append(out, d)
		}
	}
	return out
}

// tokenizeUtterances encodes every text on its own with the model's special tokens, on all CPUs.
func tokenizeUtterances(texts []string, tok *tokenizers.Tokenizer, maxLength int, trunc tokenizers.Truncation) ([][]int32, error) {
	out := make([][]int32, len(texts))
	const chunk = 512
	workers := max(1, min(runtime.NumCPU(), (len(texts)+chunk-1)/chunk))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for start := w * chunk; start < len(texts); start += workers * chunk {
				end := min(start+chunk, len(texts))
				b, err := tok.EncodeBatch(texts[start:end], tokenizers.BatchOptions{MaxLength: maxLength, Truncation: trunc})
				if err != nil {
					errs[w] = fmt.Errorf("tokenize utterances %d-%d: %w", start, end-1, err)
					return
				}
				for i, row := range b.InputIDs {
					ids := make([]int32, b.Lengths[i])
					for j := range ids {
						ids[j] = int32(row[j])
					}
					out[start+i] = ids
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (d *cseExamples) Len() int { return len(d.examples) }

// Batch lays out the responses, the context utterances (one row each, in example order) and the negatives.
func (d *cseExamples) Batch(idx []int, dev gotch.Device) (objectives.Batch, error) {
	b := Batch{ContextOf: make([][]int, len(idx)), Negatives: d.pickNegatives(idx)}
	var resp, ctx [][]int32
	for i, k := range idx {
		ex := d.examples[k]
		resp = append(resp, d.utts[ex.resp])
		for _, c := range ex.context {
			b.ContextOf[i] = append(b.ContextOf[i], len(ctx))
			ctx = append(ctx, d.utts[c])
		}
	}
	var err error
	if b.Responses, err = models.BatchInput(inputs.Padded(resp, d.pad), dev); err != nil {
		return objectives.Batch{}, err
	}
	if b.Context, err = models.BatchInput(inputs.Padded(ctx, d.pad), dev); err != nil {
		b.Responses.Drop()
		return objectives.Batch{}, err
	}
	if b.layout, err = b.makeLayout(dev); err != nil {
		b.Responses.Drop()
		b.Context.Drop()
		return objectives.Batch{}, err
	}
	return objectives.Batch{Value: b, Drop: func() { b.Responses.Drop(); b.Context.Drop(); b.layout.drop() }}, nil
}

// pickNegatives gives each example of the batch up to d.negatives other rows of it, those of other
// dialogues first, drawn from a generator seeded by the experiment's seed and the batch's indices.
func (d *cseExamples) pickNegatives(idx []int) [][]int {
	h := fnv.New64a()
	for _, k := range idx {
		fmt.Fprintf(h, "%d,", k)
	}
	g := rand.New(rand.NewPCG(uint64(d.seed), h.Sum64()))
	out := make([][]int, len(idx))
	for i, k := range idx {
		own := d.dialogue[d.examples[k].resp]
		var other, same []int
		for j, l := range idx {
			switch {
			case j == i:
			case d.dialogue[d.examples[l].resp] != own:
				other = append(other, j)
			default:
				same = append(same, j)
			}
		}
		g.Shuffle(len(other), func(a, b int) { other[a], other[b] = other[b], other[a] })
		g.Shuffle(len(same), func(a, b int) { same[a], same[b] = same[b], same[a] })
		pick := append(other, same...)
		out[i] = slices.Sorted(slices.Values(pick[:min(d.negatives, len(pick))]))
	}
	return out
}
