package buckets

import (
	"strings"

	"convrep/datasets"
)

// ExampleOptions choose MGT's training examples (context, ground-truth response) from dialogues.
type ExampleOptions struct {
	SystemOnly bool   // only system turns are responses (MultiWOZ's retrieval task, §4.1.1); else every turn after the first
	MaxContext int    // previous turns kept; 0 keeps all
	MinWords   int    // responses of at most MinWords words are dropped (0: only empty ones)
	Sep        string // joins the context's turns (the tokenizer's separator, see datasets.SepFor)
}

// Examples are MGT's training set: Contexts[e] with ground truth Pool[GT[e]]. Pool is R, the distinct
// response texts of the training set in first-seen order (§3.3: negatives are drawn from R; the ground
// truth's own text is never its negative).
type Examples struct {
	Contexts []string
	GT       []int32
	Pool     []string
}

// BuildExamples makes one example per eligible turn t ≥ 1 of each dialogue: the turns before it (the last
// MaxContext of them) are the context, turn t the response.
func BuildExamples(ds []datasets.Dialogue, opt ExampleOptions) *Examples {
	ex := &Examples{}
	index := map[string]int32{}
	for _, d := range ds {
		for t := 1; t < len(d.Turns); t++ {
			r := strings.TrimSpace(d.Turns[t].Text)
			if (opt.SystemOnly && d.Turns[t].Speaker != datasets.System) || r == "" || len(strings.Fields(r)) <= opt.MinWords {
				continue
			}
			from := 0
			if opt.MaxContext > 0 {
				from = max(0, t-opt.MaxContext)
			}
			var ctx []string
			for _, u := range d.Turns[from:t] {
				if s := strings.TrimSpace(u.Text); s != "" {
					ctx = append(ctx, s)
				}
			}
			if len(ctx) == 0 {
				continue
			}
			g, ok := index[r]
			if !ok {
				g = int32(len(ex.Pool))
				index[r] = g
				ex.Pool = append(ex.Pool, r)
			}
			ex.Contexts = append(ex.Contexts, strings.Join(ctx, opt.Sep))
			ex.GT = append(ex.GT, g)
		}
	}
	return ex
}

// Subset keeps the examples at idx and rebuilds the pool from their responses alone (R of the smaller
// training set), in first-seen order.
func (ex *Examples) Subset(idx []int) *Examples {
	out := &Examples{}
	remap := map[int32]int32{}
	for _, i := range idx {
		g, ok := remap[ex.GT[i]]
		if !ok {
			g = int32(len(out.Pool))
			remap[ex.GT[i]] = g
			out.Pool = append(out.Pool, ex.Pool[ex.GT[i]])
		}
		out.Contexts = append(out.Contexts, ex.Contexts[i])
		out.GT = append(out.GT, g)
	}
	return out
}
