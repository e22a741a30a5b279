package optim

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/safetensors"
)

// FuzzLoadState feeds LoadState an optimiser state read from arbitrary bytes, as a checkpoint holds it (the
// moments as safetensors, the scalars as JSON): no panic, and a state it accepts leaves a working optimiser.
//
//	go test -run XXX -fuzz FuzzLoadState -fuzztime 60s ./trainer/optim
func FuzzLoadState(f *testing.F) {
	lockThread(f)
	fx := newFixture(f, gotch.Float)
	opt, err := New(Config{Kind: AdamW}, fx.groups([2]float64{1e-2, 1e-2}, [2]float64{}))
	if err != nil {
		f.Fatal(err)
	}
	backward(f, fx.params, fx.grads(1, gotch.Float))
	if err := opt.Step(); err != nil {
		f.Fatal(err)
	}
	tensors, scalars, err := opt.State()
	if err != nil {
		f.Fatal(err)
	}
	var st bytes.Buffer
	if err := safetensors.Encode(&st, nil, tensors); err != nil {
		f.Fatal(err)
	}
	sc, _ := json.Marshal(scalars)
	f.Add(st.Bytes(), sc)
	f.Add(st.Bytes(), []byte(`{"step": -1}`))
	f.Fuzz(func(t *testing.T, stBytes, scJSON []byte) {
		file, err := safetensors.Parse(stBytes)
		if err != nil {
			return
		}
		var sc map[string]any
		if json.Unmarshal(scJSON, &sc) != nil {
			return
		}
		o, err := New(Config{Kind: AdamW}, fx.groups([2]float64{1e-2, 1e-2}, [2]float64{}))
		if err != nil {
			t.Fatal(err)
		}
		if err := o.LoadState(file.Tensors, sc); err != nil {
			return
		}
		if err := o.Step(); err != nil {
			t.Errorf("a state LoadState accepted breaks the next step: %v", err)
		}
	})
}
