#pragma once
#include <c10/core/Device.h>
typedef struct CUstream_st* cudaStream_t;
namespace c10 { namespace cuda { struct CUDAStream { cudaStream_t stream() const; }; CUDAStream getCurrentCUDAStream(c10::DeviceIndex); } }
