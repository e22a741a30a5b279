package objectives

import (
	"fmt"
	"sort"
	"strings"

	"convrep/models"
)

// Rate names the learning rate of [train] that a parameter group trains at.
type Rate string

const (
	EncoderRate Rate = "lr"      // train.lr: the backbone, and any other encoder an objective trains
	HeadRate    Rate = "head_lr" // train.head_lr: the heads an objective adds (DSE's contrastive head)
	Frozen      Rate = ""        // not trained: out of the optimiser and the clipping, and autograd stops there
)

// Group is a set of the model's parameters, by VarStore name, trained at one rate.
type Group struct {
	Name   string
	Rate   Rate
	Params []string
}

// EncoderGroup is the backbone's own parameters (the encoder and its heads, models.Model.Params) at train.lr.
func EncoderGroup(m *models.Model) Group {
	g := Group{Name: "encoder", Rate: EncoderRate}
	for name := range m.Params() {
		g.Params = append(g.Params, name)
	}
	sort.Strings(g.Params)
	return g
}

// PrefixGroup is every variable of m's VarStore under prefix (the parameters an objective added there).
func PrefixGroup(m *models.Model, name, prefix string, rate Rate) Group {
	g := Group{Name: name, Rate: rate}
	for v := range m.VS.Variables() {
		if strings.HasPrefix(v, prefix+".") {
			g.Params = append(g.Params, v)
		}
	}
	sort.Strings(g.Params)
	return g
}

// WithHead is the encoder at train.lr and the head under prefix at train.head_lr, the groups of an objective
// that adds one head (DSE Appendix A.2: 3e-6 for the encoder, 3e-4 for the head).
func WithHead(m *models.Model, prefix string) []Group {
	return []Group{EncoderGroup(m), PrefixGroup(m, "head", prefix, HeadRate)}
}

// FreezeBottom moves the embeddings and the bottom n encoder layers out of the encoder group g into a frozen
// group (DialogueCSE §5.3). Heads stay trainable. n must leave at least one layer to train.
func FreezeBottom(m *models.Model, g Group, n int) (trainable, frozen Group, err error) {
	if n < 0 || int64(n) >= m.Config.NumLayers {
		return g, Group{}, fmt.Errorf("freezing %d layers of a %d-layer encoder: at least one must train", n, m.Config.NumLayers)
	}
	f := m.Config.Family()
	prefixes := []string{f.EmbeddingsPrefix()}
	for i := range n {
		prefixes = append(prefixes, f.LayerPrefix(i))
	}
	trainable = Group{Name: g.Name, Rate: g.Rate}
	frozen = Group{Name: "frozen", Rate: Frozen}
	for _, name := range g.Params {
		if hasAnyPrefix(name, prefixes) {
			frozen.Params = append(frozen.Params, name)
		} else {
			trainable.Params = append(trainable.Params, name)
		}
	}
	return trainable, frozen, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
