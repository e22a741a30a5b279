package torchbin

import (
	"errors"
	"fmt"

	"github.com/sugarme/gotch/pickle"
)

// ErrClassNotAllowed is wrapped by the error for any global a pickle names
// that a state dict has no use for (posix.system, builtins.eval, ...).
var ErrClassNotAllowed = errors.New("class not allowed in a state dict")

// allowed maps module.name to what the unpickler gets for it. It is the
// unpickler's only FindClass, so nothing outside it is ever resolved: no
// generic placeholder objects, none of gotch's unimplemented rebuild
// functions (which panic) and no whole-module pickles.
//
// gotch's Unpickler resolves three names itself before asking FindClass:
// collections.OrderedDict (needed: state dicts and backward-hook slots are
// OrderedDicts), and the Python 2 pair __builtin__.object and
// copy_reg._reconstructor. The latter two only call PyNew on a class that
// was itself resolved, and nothing resolved here is PyNewable, so they can
// build nothing; whatever they leave behind is refused by the state-dict
// walk, which accepts only string keys and tensor values.
var allowed = map[string]func() any{
	"collections.OrderedDict":         func() any { return &pickle.OrderedDictClass{} },
	"torch._utils._rebuild_tensor_v2": func() any { return rebuildTensorV2{} },
	"torch._utils._rebuild_tensor":    func() any { return rebuildTensor{} },
	"torch._utils._rebuild_parameter": func() any { return rebuildParameter{} },
	"torch.FloatStorage":              func() any { return &pickle.FloatStorageClass{} },
	"torch.DoubleStorage":             func() any { return &pickle.DoubleStorageClass{} },
	"torch.HalfStorage":               func() any { return &pickle.HalfStorageClass{} },
	"torch.BFloat16Storage":           func() any { return &pickle.BFloat16StorageClass{} },
	"torch.LongStorage":               func() any { return &pickle.LongStorageClass{} },
	"torch.IntStorage":                func() any { return &pickle.IntStorageClass{} },
	"torch.ShortStorage":              func() any { return &pickle.ShortStorageClass{} },
	"torch.CharStorage":               func() any { return &pickle.CharStorageClass{} },
	"torch.ByteStorage":               func() any { return &pickle.ByteStorageClass{} },
	"torch.BoolStorage":               func() any { return &pickle.BoolStorageClass{} },
}

// findClass is the Unpickler's FindClass.
func findClass(module, name string) (any, error) {
	if mk, ok := allowed[module+"."+name]; ok {
		return mk(), nil
	}
	return nil, fmt.Errorf("%w: %s.%s", ErrClassNotAllowed, module, name)
}
