package trainer

import (
	"testing"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/experiment"
)

// Every [data] key that changes what the readers read reaches the objective's DataEnv.
func TestDataEnvCarriesReadOptions(t *testing.T) {
	for _, c := range []struct {
		name          string
		merge, keepMW bool
	}{{"defaults", false, false}, {"merged", true, false}, {"multiwoz kept", false, true}, {"both", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			e := &experiment.Experiment{}
			e.Data.MergeSameSpeaker, e.Data.MetaLWOZMultiWOZ = c.merge, c.keepMW
			env := dataEnv(e, &experiment.Backbone{}, nil, 1, gotch.CPU, zap.NewNop())
			if env.Read.MergeSameSpeaker != c.merge || env.Read.MetaLWOZMultiWOZ != c.keepMW {
				t.Fatalf("ReadOptions %+v: want merge %v, MetaLWOZ's MultiWOZ kept %v", env.Read, c.merge, c.keepMW)
			}
		})
	}
}
