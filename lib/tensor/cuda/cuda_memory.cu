// The CUDA device itself and its memory: is there a usable GPU, allocate, free, copy, zero, wait.
//
// memory.cpp calls these for every Tensor whose Device is cuda; it does the bookkeeping
// (memory_stats) itself, so these only talk to the CUDA runtime.
#include <cstdio>
#include <string>

#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/cuda/cuda_common.cuh"
#include "tensor/memory.hpp"

namespace infer::cuda {
namespace detail {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(status));
}

void check_launch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("launch of CUDA kernel ") + kernel +
                             " failed: " + cudaGetErrorString(status));
}

namespace {

// Asks the runtime once whether there is a device this build can run on. Empty when there is.
struct Probe {
  std::string reason;
  int device_count = 0;
};

const Probe& probe() {
  static const Probe result = [] {
    Probe p;
    const cudaError_t status = cudaGetDeviceCount(&p.device_count);
    if (status != cudaSuccess) {
      cudaGetLastError();  // clear it, so that it does not resurface at an unrelated call
      p.device_count = 0;
      // "no CUDA-capable device" is the plain case; any other error is worth the driver's
      // words only when there is a GPU for it to be about.
      p.reason = cuda_failure_reason(status != cudaErrorNoDevice && nvidia_gpu_present(), cudaGetErrorString(status));
      return p;
    }
    if (p.device_count == 0) {
      p.reason = cuda_failure_reason(false, "");
      return p;
    }
    // The kernels are compiled for compute capability 8.0 (Ampere) and 9.0 (Hopper), and the
    // bf16 matrix products need 8.0: an older card could not run them.
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess && prop.major < 8) {
      p.reason = "CUDA device 0 (" + std::string(prop.name) + ") has compute capability " +
                 std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                 "; this build needs 8.0 or newer";
    }
    return p;
  }();
  return result;
}

thread_local int t_current_device = -1;  // the GPU this host thread last made current

}  // namespace

void activate(const Device& device) {
  const Probe& p = probe();
  if (!p.reason.empty()) throw std::runtime_error(p.reason);
  if (device.index < 0 || device.index >= p.device_count)
    throw std::runtime_error("no CUDA device " + device.name() + " (this machine has " +
                             std::to_string(p.device_count) + ")");
  if (t_current_device != device.index) {
    INFER_CUDA_CHECK(cudaSetDevice(device.index));
    t_current_device = device.index;
  }
}

float* f32_ptr(const Tensor& t, const char* op, const char* name) {
  if (t.dtype() != DType::f32)
    throw std::invalid_argument(std::string("ops::") + op + ": " + name + " is " +
                                std::string(dtype_name(t.dtype())) + ", expected f32");
  return static_cast<float*>(t.raw());
}

void* DeviceBuffer::reserve(const Device& device, std::size_t bytes) {
  if (ptr_ != nullptr && bytes <= bytes_ && device == device_) return ptr_;
  if (ptr_ != nullptr) device_free(device_, ptr_, bytes_);  // cudaFree waits for the GPU first
  ptr_ = nullptr;
  bytes_ = 0;
  // Grow geometrically so that a prompt getting longer token by token does not reallocate
  // at every step.
  std::size_t grown = 256;
  while (grown < bytes) grown *= 2;
  ptr_ = device_alloc(device, grown);
  bytes_ = grown;
  device_ = device;
  return ptr_;
}

IntList make_int_list(const Device& device, std::span<const int32_t> values, DeviceBuffer& buffer) {
  IntList list{};
  if (values.size() <= static_cast<std::size_t>(IntList::kInline)) {
    for (std::size_t i = 0; i < values.size(); ++i) list.inline_values[i] = values[i];
    return list;
  }
  auto* dst = static_cast<int32_t*>(buffer.reserve(device, values.size_bytes()));
  // A plain cudaMemcpy on the default stream: it waits until the kernels issued before it are
  // done, so a kernel still reading the previous contents of `buffer` is never overwritten.
  INFER_CUDA_CHECK(cudaMemcpy(dst, values.data(), values.size_bytes(), cudaMemcpyHostToDevice));
  list.device = dst;
  return list;
}

}  // namespace detail

std::string unavailable_reason() { return detail::probe().reason; }

void* alloc(const Device& device, std::size_t bytes) {
  detail::activate(device);  // "no CUDA device found" when there is none
  if (bytes == 0) return nullptr;
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("cannot allocate " + std::to_string(bytes) + " bytes on " +
                             device.name() + ": " + cudaGetErrorString(status));
  }
  return ptr;
}

// Called from ~Storage, so it must not throw. At process exit the CUDA runtime may already be
// unloaded when the last static Tensor goes; that is not worth a message.
void free(const Device& device, void* ptr) {
  if (ptr == nullptr) return;
  if (cudaSetDevice(device.index) == cudaSuccess) detail::t_current_device = device.index;
  const cudaError_t status = cudaFree(ptr);
  if (status != cudaSuccess && status != cudaErrorCudartUnloading) {
    cudaGetLastError();
    std::fprintf(stderr, "warning: cudaFree on %s failed: %s\n", device.name().c_str(),
                 cudaGetErrorString(status));
  }
}

void copy(const Device& dst_device, void* dst, const Device& src_device, const void* src,
          std::size_t bytes) {
  detail::activate(dst_device.is_cuda() ? dst_device : src_device);
  if (bytes == 0) return;
  // With unified virtual addressing the runtime tells host from device pointers by itself.
  // cudaMemcpy waits for the kernels issued before it (a device→host copy returns the finished
  // result) and, from pageable host memory, returns once the source may be reused.
  INFER_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

void memset_zero(const Device& device, void* ptr, std::size_t bytes) {
  detail::activate(device);
  if (bytes == 0) return;
  INFER_CUDA_CHECK(cudaMemset(ptr, 0, bytes));
}

void synchronize() {
  if (!detail::probe().reason.empty()) return;  // no GPU: nothing can be pending
  INFER_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace infer::cuda
