// What the CUDA backend's .cu files share: error checks, the device guard, scratch buffers,
// small host arrays passed to kernels, and the warp/block reductions.
//
// Conventions of the whole backend (cuda_memory.cu, cuda_ops.cu, cuda_matmul.cu,
// cuda_attention.cu):
//   - Every kernel and every cuBLAS call runs on the legacy default stream, so the GPU executes
//     them in the order the host issued them, and a cudaMemcpy waits for the work before it.
//     Launches do not wait: the host runs ahead of the GPU until something copies a result back
//     (argmax, Tensor::to_vector), which is the one synchronisation of a decode step.
//   - The backend serves one host thread at a time (like the CPU backend's OpenMP loops, the
//     parallelism is inside each operation, not across calls).
//   - Every CUDA and cuBLAS call is checked; a failure throws std::runtime_error naming the call.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

#include "tensor/device.hpp"
#include "tensor/tensor.hpp"

namespace infer::cuda::detail {

// Throws std::runtime_error("<what> failed: <CUDA's description>") unless status is cudaSuccess.
void check(cudaError_t status, const char* what);
#define INFER_CUDA_CHECK(call) ::infer::cuda::detail::check((call), #call)

// After a kernel<<<...>>> launch: a bad launch configuration shows up here, not at the launch.
// (Errors inside the kernel surface at the next synchronising call.)
void check_launch(const char* kernel);

// Throws the one-line reason if CUDA cannot be used, or if `device` names a GPU that does not
// exist; otherwise makes `device` the current GPU of this host thread.
void activate(const Device& device);

// The f32 device pointer of a tensor, after checking its dtype (the CPU backend gets the same
// check from Tensor::host<float>()).
float* f32_ptr(const Tensor& t, const char* op, const char* name);

// A device buffer the backend keeps between calls (converted activations, attention scores,
// uploaded ids). It grows when a call needs more and is never shrunk; it is allocated through
// device_alloc, so memory_stats counts it like any tensor. It lives until the process ends.
class DeviceBuffer {
 public:
  void* reserve(const Device& device, std::size_t bytes);

 private:
  Device device_;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A short host array (token ids, positions) for a kernel. Up to kInline values travel inside
// the kernel's arguments: the launch copies its arguments to the GPU by itself, so there is no
// separate copy and no wait. Longer arrays (a long prompt) are copied to a DeviceBuffer first.
struct IntList {
  static constexpr int kInline = 64;
  const int32_t* device = nullptr;  // non-null when the values live in device memory
  int32_t inline_values[kInline];

  __device__ int32_t operator[](int64_t i) const { return device ? device[i] : inline_values[i]; }
};
IntList make_int_list(const Device& device, std::span<const int32_t> values, DeviceBuffer& buffer);

// Narrows a size for an API that takes int (cuBLAS, grid dimensions), refusing what does not fit.
inline int to_int(int64_t value, const char* what) {
  if (value < 0 || value > std::numeric_limits<int>::max())
    throw std::runtime_error(std::string("CUDA backend: ") + what + " = " + std::to_string(value) +
                             " does not fit in an int");
  return static_cast<int>(value);
}

// Blocks for a grid-stride loop over n elements with `threads` threads per block.
inline unsigned blocks_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks < 1 ? 1 : blocks) : 65535);
}

// ---- reductions -------------------------------------------------------------------------
// A warp is 32 threads that execute together; __shfl_xor_sync lets them read each other's
// registers. Five butterfly steps leave the sum (or maximum) of all 32 values in every lane.
__device__ inline float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The sum (or maximum) over a whole block, returned to every thread. Each warp reduces its
// own values, warp 0 reduces the per-warp results, and shared memory `scratch` (32 floats)
// carries them between warps. Every thread of the block must call it; blockDim.x must be a
// multiple of 32.
template <bool kMax>
__device__ inline float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int n_warps = blockDim.x / 32;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const float identity = kMax ? -INFINITY : 0.0f;
    v = lane < n_warps ? scratch[lane] : identity;
    v = kMax ? warp_max(v) : warp_sum(v);
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}
__device__ inline float block_sum(float v, float* scratch) { return block_reduce<false>(v, scratch); }
__device__ inline float block_max(float v, float* scratch) { return block_reduce<true>(v, scratch); }

}  // namespace infer::cuda::detail
