// The CUDA kernels of the small operations: embedding gather, RMSNorm, rotary embedding,
// SwiGLU, residual add and argmax. Each computes what ops_cpu.cpp computes, in the same order
// of float operations where that order matters; the parity tests (tests/cuda) hold them to it.
//
// Thread layouts, in short:
//   one block per row          embedding, rmsnorm, rope: the threads of a block share a row
//                              (a reduction over it, or one position for all its heads)
//   a grid-stride loop         silu_mul, add_inplace: every element is independent
//   one block for everything   argmax: a 49152-entry row is small; one block avoids a second pass
#include <cmath>

#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/cuda/cuda_common.cuh"

namespace infer::cuda {
namespace {

using detail::f32_ptr;

constexpr int kRowThreads = 256;        // threads per block for the row kernels
constexpr int kElementwiseThreads = 256;

// ---- embedding ----------------------------------------------------------------------------
// out[i, :] = table[ids[i], :]. Block i copies row i; its threads read consecutive columns, so
// each warp reads 32 neighbouring floats of the table row in one 128-byte transaction.
__global__ void embedding_kernel(const float* table, detail::IntList ids, float* out, int64_t d) {
  const int64_t row = blockIdx.x;
  const float* src = table + static_cast<int64_t>(ids[row]) * d;
  float* dst = out + row * d;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) dst[i] = src[i];
}

// ---- RMSNorm ------------------------------------------------------------------------------
// y = x / sqrt(mean(x²) + eps) * w. Block r normalises row r: each thread sums the squares of
// a strided subset of the row, the block adds the partial sums, and every thread then scales
// its own elements.
__global__ void rmsnorm_kernel(const float* x, const float* w, float* y, int64_t d, float eps) {
  __shared__ float scratch[32];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * d;
  float* yr = y + static_cast<int64_t>(blockIdx.x) * d;
  float sum_sq = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) sum_sq += xr[i] * xr[i];
  sum_sq = detail::block_sum(sum_sq, scratch);
  // 1/sqrt rather than rsqrtf: rsqrtf is an approximation a couple of ulps off.
  const float scale = 1.0f / sqrtf(sum_sq / static_cast<float>(d) + eps);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = xr[i] * scale * w[i];
}

// ---- rotary position embedding ----------------------------------------------------------
// Block r handles row r (one position); thread j handles rotation plane j (the pair
// x[2j], x[2j+1]) of every head, so the angle's cosine and sine are computed once per plane and
// reused for all heads, as on the CPU. The angle is computed in double: at position 8000 the
// fastest plane has turned 8000 radians, and a float angle would be off by ~5e-4.
__global__ void rope_kernel(float* x, detail::IntList positions, int n_heads, int64_t head_dim,
                            double theta) {
  const int64_t row = blockIdx.x;
  float* xr = x + row * n_heads * head_dim;
  const double position = positions[row];
  for (int64_t j = threadIdx.x; j < head_dim / 2; j += blockDim.x) {
    const double inv_freq = pow(theta, -2.0 * static_cast<double>(j) / static_cast<double>(head_dim));
    const double angle = position * inv_freq;
    const float c = static_cast<float>(cos(angle)), s = static_cast<float>(sin(angle));
    for (int h = 0; h < n_heads; ++h) {
      float* pair = xr + h * head_dim + 2 * j;
      const float a = pair[0], b = pair[1];
      pair[0] = a * c - b * s;
      pair[1] = a * s + b * c;
    }
  }
}

// ---- SwiGLU and the residual add ----------------------------------------------------------
// Grid-stride loops: thread i handles elements i, i + (all threads), ... so any n fits any grid.
__global__ void silu_mul_kernel(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    x[i] += y[i];
}

// ---- argmax -------------------------------------------------------------------------------
// One block. Each thread scans a strided subset keeping its best (value, index); the block
// then reduces the pairs. Ties go to the lower index, like std::max_element on the CPU.
__device__ inline bool better(float v, int64_t i, float best, int64_t best_i) {
  return v > best || (v == best && i < best_i);
}

__global__ void argmax_kernel(const float* x, int64_t n, int32_t* result) {
  __shared__ float values[1024];
  __shared__ int64_t indices[1024];
  float best = -INFINITY;
  int64_t best_i = n;  // "none yet" (all NaN leaves it, and the host answers 0)
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    if (better(x[i], i, best, best_i)) {
      best = x[i];
      best_i = i;
    }
  values[threadIdx.x] = best;
  indices[threadIdx.x] = best_i;
  __syncthreads();
  // Tree reduction in shared memory: halve the active threads each step.
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      const unsigned other = threadIdx.x + stride;
      if (better(values[other], indices[other], values[threadIdx.x], indices[threadIdx.x])) {
        values[threadIdx.x] = values[other];
        indices[threadIdx.x] = indices[other];
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *result = static_cast<int32_t>(indices[0] < n ? indices[0] : 0);
}

// Host-side buffers, reused between calls.
detail::DeviceBuffer g_ids_buffer, g_positions_buffer, g_argmax_result;

}  // namespace

void embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out) {
  detail::activate(out.device());
  if (ids.empty() || table.dim(1) == 0) return;
  const detail::IntList list = detail::make_int_list(out.device(), ids, g_ids_buffer);
  embedding_kernel<<<detail::to_int(std::ssize(ids), "tokens"), kRowThreads>>>(
      f32_ptr(table, "embedding", "table"), list, f32_ptr(out, "embedding", "out"), table.dim(1));
  detail::check_launch("embedding_kernel");
}

void rmsnorm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) {
  detail::activate(y.device());
  if (x.dim(0) == 0) return;
  rmsnorm_kernel<<<detail::to_int(x.dim(0), "rows"), kRowThreads>>>(
      f32_ptr(x, "rmsnorm", "x"), f32_ptr(weight, "rmsnorm", "weight"), f32_ptr(y, "rmsnorm", "y"),
      x.dim(1), eps);
  detail::check_launch("rmsnorm_kernel");
}

void rope(Tensor& x, int n_heads, std::span<const int32_t> positions, float theta) {
  detail::activate(x.device());
  if (x.dim(0) == 0) return;
  const int64_t head_dim = x.dim(1) / n_heads;
  const detail::IntList list = detail::make_int_list(x.device(), positions, g_positions_buffer);
  // One thread per rotation plane: D/2 = 32 for SmolLM2, so a single warp per row.
  const int threads = head_dim / 2 >= 128 ? 128 : 32 * static_cast<int>((head_dim / 2 + 31) / 32);
  rope_kernel<<<detail::to_int(x.dim(0), "rows"), threads>>>(f32_ptr(x, "rope", "x"), list, n_heads,
                                                              head_dim, static_cast<double>(theta));
  detail::check_launch("rope_kernel");
}

void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  detail::activate(out.device());
  const int64_t n = gate.numel();
  if (n == 0) return;
  silu_mul_kernel<<<detail::blocks_for(n, kElementwiseThreads), kElementwiseThreads>>>(
      f32_ptr(gate, "silu_mul", "gate"), f32_ptr(up, "silu_mul", "up"),
      f32_ptr(out, "silu_mul", "out"), n);
  detail::check_launch("silu_mul_kernel");
}

void add_inplace(Tensor& x, const Tensor& y) {
  detail::activate(x.device());
  const int64_t n = x.numel();
  if (n == 0) return;
  add_kernel<<<detail::blocks_for(n, kElementwiseThreads), kElementwiseThreads>>>(
      f32_ptr(x, "add_inplace", "x"), f32_ptr(y, "add_inplace", "y"), n);
  detail::check_launch("add_kernel");
}

int32_t argmax(const Tensor& row) {
  detail::activate(row.device());
  const float* x = f32_ptr(row, "argmax", "row");
  auto* result = static_cast<int32_t*>(g_argmax_result.reserve(row.device(), sizeof(int32_t)));
  argmax_kernel<<<1, 1024>>>(x, row.numel(), result);
  detail::check_launch("argmax_kernel");
  // Copying the answer back waits for every kernel issued so far: in a decode loop this is the
  // one synchronisation per token.
  int32_t host = 0;
  INFER_CUDA_CHECK(cudaMemcpy(&host, result, sizeof(host), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace infer::cuda
