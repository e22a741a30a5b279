package trainer

import (
	"fmt"
	"strings"

	"convrep/models"
	"convrep/objectives"
)

// frozenNames lists the parameters an objective asks to leave untrained (objectives.LayerFreezer): the
// embeddings and the bottom n encoder layers, under the model's own names (bert.embeddings.*,
// bert.encoder.layer.0.* … for BERT and RoBERTa; distilbert.transformer.layer.0.* for DistilBERT). Heads and
// the parameters the objective added stay trainable. nil when the objective freezes nothing.
func frozenNames(obj objectives.Objective, m *models.Model) (map[string]bool, error) {
	f, ok := obj.(objectives.LayerFreezer)
	if !ok || f.FrozenLayers() == 0 {
		return nil, nil
	}
	n := f.FrozenLayers()
	if n < 0 || int64(n) >= m.Config.NumLayers {
		return nil, fmt.Errorf("objective %s freezes %d layers of a %d-layer encoder: at least one must train", obj.Name(), n, m.Config.NumLayers)
	}
	layers := "encoder.layer."
	if m.Config.Arch == models.DistilBERT {
		layers = "transformer.layer."
	}
	prefixes := []string{m.Config.Prefix() + "embeddings."}
	for i := range n {
		prefixes = append(prefixes, fmt.Sprintf("%s%s%d.", m.Config.Prefix(), layers, i))
	}
	frozen := map[string]bool{}
	for name := range m.Params() {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				frozen[name] = true
			}
		}
	}
	return frozen, nil
}
