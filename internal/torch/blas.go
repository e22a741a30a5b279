package torch

/*
#include <dlfcn.h>
#include <stddef.h>

typedef char *(*convrep_corename_fn)(void);

// convrep_openblas_core is openblas_get_corename() of the OpenBLAS libtorch loaded, or NULL when libtorch's BLAS
// is another (MKL in PyTorch's own builds).
static const char *convrep_openblas_core(void) {
	convrep_corename_fn f = (convrep_corename_fn)dlsym(RTLD_DEFAULT, "openblas_get_corename");
	return f == NULL ? NULL : f();
}
*/
import "C"

// BLASCore is the kernel set OpenBLAS, the BLAS under Debian's libtorch, runs the CPU's matrix products with:
// its own name for it ("Haswell" for AVX2, "SkylakeX" or "Cooperlake" for AVX-512, ...), or "" when libtorch's
// BLAS is not OpenBLAS. OpenBLAS picks it for the CPU when it loads, unless OPENBLAS_CORETYPE names one.
func BLASCore() string {
	if c := C.convrep_openblas_core(); c != nil {
		return C.GoString(c)
	}
	return ""
}
