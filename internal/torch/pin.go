package torch

// #include <stdlib.h>
// #include "pin.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/sugarme/gotch/ts"
)

// PinMemory returns a copy of x in page-locked host memory, the source a non-blocking copy to the GPU needs.
// It passes libtorch no device (pin.cpp says why: libtorch 2.11 warns on every call that names one).
func PinMemory(x *ts.Tensor) (*ts.Tensor, error) {
	var out unsafe.Pointer
	if err := takeError(C.convrep_pin_memory(x.Ctensor(), &out)); err != nil {
		return nil, fmt.Errorf("pin memory: %w", err)
	}
	return ts.FromCtensor(out), nil
}
