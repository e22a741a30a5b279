package objectives

import (
	"math/rand/v2"
	"runtime"
	"slices"

	"go.uber.org/zap"

	"convrep/datasets"
)

// ReadDialogueTokens reads the experiment's corpora and tokenises every dialogue turn by turn with the role
// tokens (which the objective's Requirements added to the tokenizer). With data.max_examples, a random subset
// of that many dialogues (the same for every run of the seed) is kept, in corpus order. keep drops dialogues
// an objective cannot use before the subset is drawn. The result is not cached on disk: tokenising turns is
// fast next to training, and the dialogues' cuts change every epoch.
func ReadDialogueTokens(env DataEnv, keep func(datasets.Dialogue) bool) (*datasets.DialogueTokens, error) {
	ds, err := env.ReadDialogues()
	if err != nil {
		return nil, err
	}
	read := len(ds)
	ds = slices.DeleteFunc(ds, func(d datasets.Dialogue) bool { return !keep(d) })
	if n := env.MaxExamples; n > 0 && len(ds) > n {
		g := rand.New(rand.NewPCG(uint64(env.Seed), 0x6469616c6f677565))
		pick := g.Perm(len(ds))[:n]
		slices.Sort(pick)
		sub := make([]datasets.Dialogue, n)
		for i, j := range pick {
			sub[i] = ds[j]
		}
		ds = sub
	}
	dt, err := datasets.TokenizeDialogues(ds, env.Tok, datasets.FlattenOptions{}, runtime.NumCPU())
	if err != nil {
		return nil, err
	}
	env.Logger().Info("tokenised dialogues", zap.Int("read", read), zap.Int("kept", dt.Len()))
	return dt, nil
}
