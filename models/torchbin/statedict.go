package torchbin

import (
	"fmt"

	"github.com/sugarme/gotch/pickle"
)

// entry is one name of a state dict and the tensor view it maps to.
type entry struct {
	name string
	t    *pickle.StorageTensor
}

// entries walks the unpickled root, which must be a dict or OrderedDict of
// string keys and tensor values; anything else is not a state dict.
func entries(root any) ([]entry, error) {
	var out []entry
	add := func(k, v any) error {
		name, ok := k.(string)
		if !ok {
			return fmt.Errorf("state dict key %d is %s, not a string", len(out), describe(k))
		}
		t, ok := v.(*pickle.StorageTensor)
		if !ok {
			return fmt.Errorf("state dict entry %q is %s, not a tensor", name, describe(v))
		}
		out = append(out, entry{name, t})
		return nil
	}
	switch d := root.(type) {
	case *pickle.Dict:
		seen := make(map[string]bool, d.Len())
		for _, e := range *d {
			if err := add(e.Key, e.Value); err != nil {
				return nil, err
			}
			// gotch's Dict appends rather than replaces; a repeated key would
			// silently shadow one tensor with another.
			if name := out[len(out)-1].name; seen[name] {
				return nil, fmt.Errorf("state dict names %q twice", name)
			} else {
				seen[name] = true
			}
		}
	case *pickle.OrderedDict:
		for el := d.List.Front(); el != nil; el = el.Next() {
			e, ok := el.Value.(*pickle.OrderedDictEntry)
			if !ok {
				return nil, fmt.Errorf("OrderedDict holds %T", el.Value)
			}
			if err := add(e.Key, e.Value); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("the pickle holds %s, not a state dict (a dict of tensors)", describe(root))
	}
	return out, nil
}
