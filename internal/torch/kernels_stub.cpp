//go:build convrep_nokernels

// Built with -tags convrep_nokernels in place of kernels.cpp, profile.cpp and attention.cpp: the calls exist and
// refuse, so that convrep still builds where those files do not compile against a libtorch (scripts/gpu_check.sh
// builds so when the first build fails, and reports that failure). Everything else runs on libtorch's
// composites, attention on the encoder's explicit path.
#include "attention.h"
#include "kernels.h"
#include "profile.h"

#include <cstring>

namespace {
char *refuse() {
  return strdup("this convrep was built with -tags convrep_nokernels: no fused kernels, no profiler, no fused attention");
}
} // namespace

int convrep_attention_compiled(void) { return 0; }
char *convrep_attention(void *, void *, void *, void *, double, void **) { return refuse(); }
char *convrep_attention_backend(void *, void *, void *, void *, double, long long *) { return refuse(); }

int convrep_kernels_compiled(void) { return 0; }
char *convrep_kernels_load(int, const char *) { return refuse(); }
int convrep_compute_capability(int, char **err) {
  *err = refuse();
  return -1;
}
int convrep_kernels_loaded(int) { return 0; }
char *convrep_drop_add_layer_norm(void *, void *, void *, void *, double, double, void **) { return refuse(); }
char *convrep_dense_bias_gelu(void *, void *, void *, void **) { return refuse(); }
char *convrep_embed_layer_norm(void *, void *, void *, void *, void *, void *, void *, void *, double, double, void **) {
  return refuse();
}
char *convrep_profile_start(int) { return refuse(); }
char *convrep_profile_stop(const char *) { return refuse(); }
