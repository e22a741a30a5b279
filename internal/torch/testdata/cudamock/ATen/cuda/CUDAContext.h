#pragma once
// mock for a syntax check of convrep's CUDA-only shim code on a CPU machine
#include <ATen/ATen.h>
struct cudaDeviceProp { int major, minor, multiProcessorCount; };
namespace at { namespace cuda { cudaDeviceProp* getDeviceProperties(c10::DeviceIndex); } }
