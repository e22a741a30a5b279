#pragma once
#include <ATen/ATen.h>
#include <mutex>
namespace at {
struct PhiloxCudaState { union P { uint64_t val; int64_t* ptr; }; P seed_, offset_; uint32_t offset_intragraph_; bool captured_; };
struct CUDAGeneratorImpl : public c10::GeneratorImpl { static c10::DeviceType device_type() { return c10::DeviceType::CUDA; } std::mutex mutex_; PhiloxCudaState philox_cuda_state(uint64_t); };
namespace cuda { namespace detail { const Generator& getDefaultCUDAGenerator(c10::DeviceIndex); } }
}
