package torch

// #include <stdlib.h>
// #include "clip.h"
import "C"

import (
	"unsafe"

	"github.com/sugarme/gotch/ts"
)

// ClipGradNorm scales the gradients of params in place so that their global L2 norm is at most maxNorm, in
// one call into libtorch (torch.nn.utils.clip_grad_norm_'s foreach path: one kernel for every gradient's
// norm, one scaling them all from libtorch 2.3 on), and returns the norm before clipping as a 0-dim tensor on
// the gradients' device, which the caller owns. Nothing waits for the device. maxNorm must be positive
// (trainer/optim checks it).
func ClipGradNorm(params []*ts.Tensor, maxNorm float64) (*ts.Tensor, error) {
	var hs []unsafe.Pointer
	if len(params) > 0 {
		hs = handles(params)
	}
	var p *unsafe.Pointer
	if len(hs) > 0 {
		p = ptrs(hs)
	}
	var out unsafe.Pointer
	countCall()
	if err := takeError(C.convrep_clip_grad_norm(C.int(len(hs)), p, C.double(maxNorm), &out)); err != nil {
		return nil, err
	}
	return ts.FromCtensor(out), nil
}
