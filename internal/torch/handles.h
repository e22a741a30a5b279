// handles.h: how the shim's C functions take and give libtorch tensors and report failures. A tensor crosses to
// Go as a void* to a heap at::Tensor (gotch's handles); an exception becomes a malloc'd message, which the Go
// side frees. One definition for every file of the shim.
#ifndef CONVREP_HANDLES_H
#define CONVREP_HANDLES_H
#include <ATen/core/Tensor.h>

#include <cstring>
#include <exception>
#include <string>
#include <utility>

namespace convrep {
// The tensor a handle points to.
inline at::Tensor &tensor(void *h) { return *static_cast<at::Tensor *>(h); }
// A new handle owning t.
inline void *handle(at::Tensor t) { return new at::Tensor(std::move(t)); }
// The message of a failure, for the Go side to free.
inline char *error_of(const std::exception &e) { return strdup(e.what()); }
inline char *error_of(const std::string &s) { return strdup(s.c_str()); }
} // namespace convrep
#endif
