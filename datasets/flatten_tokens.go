package datasets

import (
	"fmt"
	"runtime"
	"sync"

	"convrep/tokenizers"
)

// DialogueTokens are dialogues tokenised turn by turn, each turn as its role token's id followed by its
// text's ids, without [CLS] / [SEP]. Objectives that cut a dialogue somewhere (TOD-BERT's context and
// response, FutureTOD's context and future) assemble their inputs from these rows with Span, so the text
// is tokenised once. Span(i, 0, n) gives the ids FlattenTurns's text would encode to.
type DialogueTokens struct {
	Turns  [][][]int32 // dialogue → turn → ids
	System [][]bool    // dialogue → turn → spoken by the system
	CLS    int64
	SEP    int64
}

// Len is the number of dialogues.
func (d *DialogueTokens) Len() int { return len(d.Turns) }

// TokenizeDialogues tokenises every turn of ds on workers goroutines (<= 0: one per CPU). The role tokens
// of opt must be tokens of tok (added with AddSpecialTokens), else it is an error. Turns are kept whole;
// Span truncates.
func TokenizeDialogues(ds []Dialogue, tok *tokenizers.Tokenizer, opt FlattenOptions, workers int) (*DialogueTokens, error) {
	if tok == nil {
		return nil, fmt.Errorf("tokenize dialogues: nil tokenizer")
	}
	out := &DialogueTokens{Turns: make([][][]int32, len(ds)), System: make([][]bool, len(ds))}
	role := map[Speaker]int32{}
	for _, s := range []Speaker{User, System} {
		id, ok := tok.TokenID(opt.role(s))
		if !ok {
			return nil, fmt.Errorf("tokenize dialogues: role token %q is not in the tokenizer (add it as a special token)", opt.role(s))
		}
		role[s] = int32(id)
	}
	cls, sep, err := boundaryIDs(tok)
	if err != nil {
		return nil, fmt.Errorf("tokenize dialogues: %w", err)
	}
	out.CLS, out.SEP = cls, sep
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, len(ds))
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(1, min(workers, len(ds))) {
		wg.Go(func() {
			for i := range next {
				out.Turns[i], out.System[i], errs[i] = tokenizeTurns(ds[i], tok, role, cls, sep)
			}
		})
	}
	for i := range ds {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("tokenize dialogue %q of %s: %w", ds[i].ID, ds[i].Corpus, err)
		}
	}
	return out, nil
}

// boundaryIDs are the ids the tokenizer puts around a single text ([CLS]/[SEP], <s>/</s>).
func boundaryIDs(tok *tokenizers.Tokenizer) (cls, sep int64, err error) {
	for _, slot := range []struct {
		name string
		id   *int64
	}{{"cls_token", &cls}, {"sep_token", &sep}} {
		s, ok := tok.SpecialToken(slot.name)
		if !ok {
			return 0, 0, fmt.Errorf("the tokenizer has no %s", slot.name)
		}
		if *slot.id, ok = tok.TokenID(s); !ok {
			return 0, 0, fmt.Errorf("the tokenizer's %s %q has no id", slot.name, s)
		}
	}
	return cls, sep, nil
}

func tokenizeTurns(d Dialogue, tok *tokenizers.Tokenizer, role map[Speaker]int32, cls, sep int64) ([][]int32, []bool, error) {
	turns := make([][]int32, len(d.Turns))
	sys := make([]bool, len(d.Turns))
	for j, t := range d.Turns {
		ids, err := tok.Encode(t.Text)
		if err != nil {
			return nil, nil, fmt.Errorf("turn %d: %w", j, err)
		}
		// Encode wraps the text as [CLS] … [SEP]; the turn keeps what lies between.
		if len(ids) < 2 || ids[0] != cls || ids[len(ids)-1] != sep {
			return nil, nil, fmt.Errorf("turn %d: the tokenizer did not wrap it in [CLS] … [SEP]", j)
		}
		row := make([]int32, 0, len(ids)-1)
		sp := t.Speaker
		if sp != System {
			sp = User
		}
		row = append(row, role[sp])
		for _, id := range ids[1 : len(ids)-1] {
			row = append(row, int32(id))
		}
		turns[j], sys[j] = row, sp == System
	}
	return turns, sys, nil
}

// Span returns [CLS] + turns from..to-1 of dialogue i + [SEP], at most maxLen ids (0: no limit). When the
// turns do not fit, keepEnd keeps their last tokens (a context next to its response), otherwise their
// first.
func (d *DialogueTokens) Span(i, from, to, maxLen int, keepEnd bool) []int64 {
	var body []int32
	for _, t := range d.Turns[i][from:to] {
		body = append(body, t...)
	}
	if room := maxLen - 2; maxLen > 0 && len(body) > max(room, 0) {
		if keepEnd {
			body = body[len(body)-max(room, 0):]
		} else {
			body = body[:max(room, 0)]
		}
	}
	out := make([]int64, 0, len(body)+2)
	out = append(out, d.CLS)
	for _, id := range body {
		out = append(out, int64(id))
	}
	return append(out, d.SEP)
}
