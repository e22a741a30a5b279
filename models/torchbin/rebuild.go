package torchbin

import (
	"fmt"

	"github.com/sugarme/gotch/pickle"
)

// The rebuild functions check their arguments strictly before handing them
// to gotch's: gotch turns a non-integer size or stride into 0 with a printed
// warning, and accepts negative ones, which would then index out of bounds.

// rebuildTensorV2 is torch._utils._rebuild_tensor_v2(storage, storage_offset,
// size, stride, requires_grad, backward_hooks[, metadata]).
type rebuildTensorV2 struct{}

func (rebuildTensorV2) Call(args ...any) (any, error) {
	const fn = "_rebuild_tensor_v2"
	if len(args) != 6 && len(args) != 7 {
		return nil, fmt.Errorf("%s: %d arguments, want 6 or 7", fn, len(args))
	}
	if err := checkView(fn, args[:4]); err != nil {
		return nil, err
	}
	if _, ok := args[4].(bool); !ok {
		return nil, fmt.Errorf("%s: requires_grad is %s, not a bool", fn, describe(args[4]))
	}
	if !isEmptyDict(args[5]) {
		return nil, fmt.Errorf("%s: backward_hooks is %s, want an empty OrderedDict", fn, describe(args[5]))
	}
	// Recent torch appends tensor metadata (e.g. the conj/neg bits) only when
	// there is any; a tensor that needs it would load with wrong values.
	if len(args) == 7 && !isEmptyDict(args[6]) {
		return nil, fmt.Errorf("%s: tensor metadata %s is not supported", fn, describe(args[6]))
	}
	return (&pickle.RebuildTensorV2{}).Call(args[:6]...)
}

// rebuildTensor is torch._utils._rebuild_tensor(storage, storage_offset,
// size, stride), used by old torch versions.
type rebuildTensor struct{}

func (rebuildTensor) Call(args ...any) (any, error) {
	const fn = "_rebuild_tensor"
	if len(args) != 4 {
		return nil, fmt.Errorf("%s: %d arguments, want 4", fn, len(args))
	}
	if err := checkView(fn, args); err != nil {
		return nil, err
	}
	return (&pickle.RebuildTensor{}).Call(args...)
}

// rebuildParameter is torch._utils._rebuild_parameter(data, requires_grad,
// backward_hooks): the tensor itself is all a state dict needs.
type rebuildParameter struct{}

func (rebuildParameter) Call(args ...any) (any, error) {
	const fn = "_rebuild_parameter"
	if len(args) != 3 {
		return nil, fmt.Errorf("%s: %d arguments, want 3", fn, len(args))
	}
	if _, ok := args[0].(*pickle.StorageTensor); !ok {
		return nil, fmt.Errorf("%s: data is %s, not a tensor", fn, describe(args[0]))
	}
	if _, ok := args[1].(bool); !ok {
		return nil, fmt.Errorf("%s: requires_grad is %s, not a bool", fn, describe(args[1]))
	}
	if !isEmptyDict(args[2]) {
		return nil, fmt.Errorf("%s: backward_hooks is %s, want an empty OrderedDict", fn, describe(args[2]))
	}
	return (&pickle.RebuildParameter{}).Call(args...)
}

// checkView checks (storage, storage_offset, size, stride).
func checkView(fn string, args []any) error {
	if _, ok := args[0].(pickle.Storage); !ok {
		return fmt.Errorf("%s: storage is %s, not a storage", fn, describe(args[0]))
	}
	if off, ok := args[1].(int); !ok || off < 0 {
		return fmt.Errorf("%s: storage offset is %s, want a non-negative int", fn, describe(args[1]))
	}
	size, err := intTuple(fn, "size", args[2])
	if err != nil {
		return err
	}
	stride, err := intTuple(fn, "stride", args[3])
	if err != nil {
		return err
	}
	if size != stride {
		return fmt.Errorf("%s: size has %d dimensions but stride has %d", fn, size, stride)
	}
	return nil
}

// intTuple checks that v is a tuple of non-negative ints and returns its length.
func intTuple(fn, what string, v any) (int, error) {
	t, ok := v.(*pickle.Tuple)
	if !ok {
		return 0, fmt.Errorf("%s: %s is %s, not a tuple", fn, what, describe(v))
	}
	for i, x := range *t {
		if n, ok := x.(int); !ok || n < 0 {
			return 0, fmt.Errorf("%s: %s[%d] is %s, want a non-negative int", fn, what, i, describe(x))
		}
	}
	return len(*t), nil
}

// isEmptyDict reports whether v is None or an empty dict / OrderedDict.
func isEmptyDict(v any) bool {
	switch d := v.(type) {
	case nil:
		return true
	case *pickle.OrderedDict:
		return d.Len() == 0
	case *pickle.Dict:
		return d.Len() == 0
	}
	return false
}

// describe names a decoded pickle value for an error message without
// printing its (possibly huge or self-referencing) contents.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case int:
		return fmt.Sprintf("int %d", x)
	case bool:
		return fmt.Sprintf("bool %t", x)
	case string:
		if len(x) > 64 {
			x = x[:64] + "..."
		}
		return fmt.Sprintf("string %q", x)
	case *pickle.Tuple:
		return fmt.Sprintf("a tuple of %d", x.Len())
	case *pickle.Dict:
		return fmt.Sprintf("a dict of %d", x.Len())
	case *pickle.OrderedDict:
		return fmt.Sprintf("an OrderedDict of %d", x.Len())
	case *pickle.List:
		return fmt.Sprintf("a list of %d", x.Len())
	case *pickle.StorageTensor:
		return "a tensor"
	case *pickle.GenericObject:
		return fmt.Sprintf("an object of %s.%s", x.Class.Module, x.Class.Name)
	}
	return fmt.Sprintf("a value of Go type %T", v)
}
