package dialoguecse

import (
	"fmt"
	"strings"

	"convrep/objectives"
)

// Aggregation is how DialogueCSE fuses the refined embedding matrices of the context turns (§4.3).
type Aggregation string

const (
	// TurnMean is I2, Eq. 7: R̃ = 1/(t−1) Σ_i R̂_i. Table 2's better strategy and the default.
	TurnMean Aggregation = "mean"
	// TurnAttention is I1, Eq. 5-6: R̃ = Σ_i α_i R̂_i with α = softmax_i(FFN(R̂_i)).
	TurnAttention Aggregation = "attention"
)

// ParseAggregation reads an aggregation name case-insensitively; the paper's labels I1 and I2 are accepted.
func ParseAggregation(s string) (Aggregation, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "mean", "i2":
		return TurnMean, nil
	case "attention", "i1":
		return TurnAttention, nil
	}
	return "", fmt.Errorf("turn aggregation %q is not one of mean (I2), attention (I1)", s)
}

// Config is the [objective] table of a DialogueCSE experiment. The objective and the trainer's
// dataset both read it with Parse, so they agree on every value and an unknown key fails once.
type Config struct {
	// Temperature τ of Eq. 8 (0.1, the best of Table 3).
	Temperature float64
	// Aggregation of the turns: TurnMean (I2) or TurnAttention (I1).
	Aggregation Aggregation
	// AttentionHidden is the width of I1's two-layer FFN (0: the encoder's hidden size). The paper gives none.
	AttentionHidden int64
	// Negatives is the number of negative pairs per response (§3; Table 4 tries 1, 4, 9, 19; the main
	// results, Table 3 at τ = 0.1, are those of 9). They are the responses of other examples of the batch,
	// so a batch must hold at least Negatives+1 examples.
	Negatives int
	// ContextTurns is how many turns make the response's context C in all, on both sides of it (§5.3: "the
	// number of context turns" 3; §4.2: t − 1 of them for a session of t turns). contextWindows says which.
	ContextTurns int
	// MinTurns drops dialogues of fewer turns (§5.1.1 drops those under 4 for JDDC and ECD, none for MDC);
	// at least 2, so that every response has a context.
	MinTurns int
	// FreezeLayers is the number of bottom encoder layers left untrained, the embeddings with them (§5.3: 6).
	FreezeLayers int
}

// Parse reads the DialogueCSE settings strictly, with the paper's values as defaults.
func Parse(s objectives.Settings) (Config, error) {
	r := s.Reader()
	c := Config{
		Temperature:     r.Number("temperature", 0.1),
		AttentionHidden: r.Integer("attention_hidden", 0),
		Negatives:       int(r.Integer("negatives", 9)),
		ContextTurns:    int(r.Integer("context_turns", 3)),
		MinTurns:        int(r.Integer("min_turns", 2)),
		FreezeLayers:    int(r.Integer("freeze_layers", 6)),
	}
	agg := r.Text("aggregation", string(TurnMean))
	if err := r.Done(); err != nil {
		return c, err
	}
	var err error
	if c.Aggregation, err = ParseAggregation(agg); err != nil {
		return c, fmt.Errorf("setting aggregation: %w", err)
	}
	switch {
	case !(c.Temperature > 0):
		return c, fmt.Errorf("setting temperature = %v: must be positive", c.Temperature)
	case c.AttentionHidden < 0:
		return c, fmt.Errorf("setting attention_hidden = %d: must be positive (or 0 for the hidden size)", c.AttentionHidden)
	case c.Negatives < 1:
		return c, fmt.Errorf("setting negatives = %d: a response needs at least one negative pair", c.Negatives)
	case c.ContextTurns < 1:
		return c, fmt.Errorf("setting context_turns = %d: a response needs at least one context turn", c.ContextTurns)
	case c.MinTurns < 2:
		return c, fmt.Errorf("setting min_turns = %d: a dialogue needs 2 turns for a response to have a context", c.MinTurns)
	case c.FreezeLayers < 0:
		return c, fmt.Errorf("setting freeze_layers = %d: must not be negative", c.FreezeLayers)
	case c.AttentionHidden != 0 && c.Aggregation != TurnAttention:
		return c, fmt.Errorf("setting attention_hidden is for aggregation = \"attention\" (I1), not %q", c.Aggregation)
	}
	return c, nil
}
