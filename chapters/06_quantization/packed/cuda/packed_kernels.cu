// Chapter 06's CUDA kernels, part 2: matrix products and embedding lookups straight from packed
// weights (the contract is packed_kernels.hpp; the decode formulas are cuda/packed_decode.hpp).
//
// Two kernels for y[n, rows] = x[n, cols] · Ŵᵀ, chosen by the number of x rows n:
//
//   n ≤ kSmallN (decode, a few requests)   packed_gemv_kernel: one warp per output row. Lane l
//       decodes the runs of 8 weights 8l, 8(l + 32), … of the row in registers, so the 32 lanes
//       together read neighbouring codes (256 weights per step), and multiplies each run with
//       up to kTile = 8 x rows at once; a warp shuffle adds the 32 partial sums. More than 8 x
//       rows: the warp repeats for the next 8, reading the (by then cached) codes again. The
//       weights are read from memory once per decode step, which is the whole point: 1 byte
//       (int8) or ~0.5 byte (4-bit) per weight instead of 4.
//   n > kSmallN (prefill)                  packed_tiled_kernel: a block computes a 64 × 64 tile
//       of y. Step by step along cols it decodes a 64 × 32 tile of Ŵ into shared memory, loads
//       the matching 64 × 32 tile of x, and every thread accumulates 4 × 4 outputs. Each decoded
//       weight serves 64 x rows, so decoding costs little next to the multiply-adds.
//
// packed_gather_rows: one block per looked-up row; its threads decode consecutive columns.
//
// Conventions of lib/tensor/cuda (cuda_common.cuh): the legacy default stream, every launch
// checked with check_launch, the device made current with activate. The device is the one that
// holds w (cudaPointerGetAttributes), and every pointer must be device memory: a host pointer is
// refused with std::invalid_argument rather than left to fault inside a kernel.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/packed_decode.hpp"
#include "packed_kernels.hpp"
#include "tensor/cuda/cuda_common.cuh"

namespace infer::quant {
namespace {

namespace detail = infer::cuda::detail;
using packed::decode_at;
using packed::lane_partial;

// ---- the device of the pointers -----------------------------------------------------------------

// Checks that p is device memory (or managed memory) and returns its device.
int device_of(const void* p, const char* op, const char* name) {
  cudaPointerAttributes attributes{};
  INFER_CUDA_CHECK(cudaPointerGetAttributes(&attributes, p));
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged)
    throw std::invalid_argument(std::string(op) + ": " + name + " is not device memory");
  return attributes.device;
}

// Makes the device that holds `w` current after checking every pointer; throws the backend's
// one-line reason when CUDA cannot be used at all.
void activate_for(const char* op, const uint8_t* w, const void* in, const char* in_name, const float* out) {
  detail::activate(Device::cuda(0));  // "no CUDA device: ..." before any other CUDA call
  const int device = device_of(w, op, "w");
  device_of(in, op, in_name);
  device_of(out, op, "the output");
  detail::activate(Device::cuda(device));
}

void check_shape(const char* op, int64_t rows, int64_t cols, int64_t n) {
  if (rows < 0 || cols < 0 || n < 0)
    throw std::invalid_argument(std::string(op) + ": negative size");
}

// ---- decode: one warp per output row ------------------------------------------------------------

constexpr int kWarpsPerBlock = 8;  // 256 threads
constexpr int kTile = 8;           // x rows per pass of a warp over its weight row
constexpr int64_t kSmallN = 16;    // up to here the warp kernel; above, the tiled kernel

template <PackedFormat F>
__global__ void packed_gemv_kernel(const uint8_t* __restrict__ w, int64_t rows, int64_t cols,
                                   const float* __restrict__ x, int64_t n, float* __restrict__ y) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (row >= rows) return;  // the whole warp leaves together, so its shuffles stay full
  for (int64_t t0 = 0; t0 < n; t0 += kTile) {
    const int tn = static_cast<int>(n - t0 < kTile ? n - t0 : kTile);
    float acc[kTile];
#pragma unroll
    for (int t = 0; t < kTile; ++t) acc[t] = 0.0f;
    lane_partial<F, kTile>(w, rows, cols, row, x + t0 * cols, tn, lane, 32, acc);
#pragma unroll
    for (int t = 0; t < kTile; ++t) {
      // tn is the same for the whole warp, so all 32 lanes take this branch together and every
      // shuffle of warp_sum is full.
      if (t < tn) {
        const float sum = detail::warp_sum(acc[t]);
        if (lane == 0) y[(t0 + t) * rows + row] = sum;
      }
    }
  }
}

// ---- prefill: 64 × 64 tiles through shared memory -----------------------------------------------

constexpr int kTileRows = 64;  // rows of Ŵ (columns of y) per block
constexpr int kTileN = 64;     // rows of x (rows of y) per block
constexpr int kTileK = 32;     // columns per step
constexpr int kTiledThreads = 256;  // 16 × 16 threads, 4 × 4 outputs each

// Thread (tr, tn) = (tid % 16, tid / 16) computes y[n0 + tn + 16a, m0 + tr + 16b], a, b < 4:
// consecutive threads write consecutive columns of y, and in the inner loop they read different
// rows of the weight tile (bank (tr·33 + k) % 32, no conflicts: the +1 pads each row) while the
// x value is the same for a half-warp (a broadcast).
template <PackedFormat F>
__global__ void __launch_bounds__(kTiledThreads)
    packed_tiled_kernel(const uint8_t* __restrict__ w, int64_t rows, int64_t cols, const float* __restrict__ x,
                        int64_t n, float* __restrict__ y) {
  __shared__ float w_tile[kTileRows][kTileK + 1];
  __shared__ float x_tile[kTileN][kTileK + 1];
  const int tid = static_cast<int>(threadIdx.x);
  const int tr = tid % 16, tn = tid / 16;
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kTileRows;
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * kTileN;

  float acc[4][4];
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b) acc[a][b] = 0.0f;

  for (int64_t k0 = 0; k0 < cols; k0 += kTileK) {
    // Stage the tiles: element e of the 64 × 32 tile is (e / 32, e % 32), so consecutive
    // threads read consecutive columns (neighbouring codes, neighbouring x values). Outside the
    // matrix: zeros, which add nothing.
#pragma unroll
    for (int i = 0; i < kTileRows * kTileK / kTiledThreads; ++i) {
      const int e = tid + i * kTiledThreads;
      const int rr = e / kTileK, kk = e % kTileK;
      const int64_t r = m0 + rr, c = k0 + kk;
      w_tile[rr][kk] = (r < rows && c < cols) ? decode_at<F>(w, rows, cols, r, c) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kTileN * kTileK / kTiledThreads; ++i) {
      const int e = tid + i * kTiledThreads;
      const int nn = e / kTileK, kk = e % kTileK;
      const int64_t t = n0 + nn, c = k0 + kk;
      x_tile[nn][kk] = (t < n && c < cols) ? x[t * cols + c] : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < kTileK; ++k) {
      float wv[4], xv[4];
#pragma unroll
      for (int b = 0; b < 4; ++b) wv[b] = w_tile[tr + 16 * b][k];
#pragma unroll
      for (int a = 0; a < 4; ++a) xv[a] = x_tile[tn + 16 * a][k];
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) acc[a][b] += xv[a] * wv[b];
    }
    __syncthreads();  // before the next step overwrites the tiles
  }

#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int64_t t = n0 + tn + 16 * a;
    if (t >= n) continue;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int64_t r = m0 + tr + 16 * b;
      if (r < rows) y[t * rows + r] = acc[a][b];
    }
  }
}

// ---- embedding lookup ---------------------------------------------------------------------------

// Block i writes out[i, :] = Ŵ[ids[i], :]. An id outside [0, rows) cannot throw on the GPU: its
// row is filled with NaN, which no caller can mistake for an embedding.
template <PackedFormat F>
__global__ void packed_gather_kernel(const uint8_t* __restrict__ w, int64_t rows, int64_t cols,
                                     const int32_t* __restrict__ ids, float* __restrict__ out) {
  const int64_t i = blockIdx.x;
  const int64_t id = ids[i];
  float* dst = out + i * cols;
  const bool ok = id >= 0 && id < rows;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dst[c] = ok ? decode_at<F>(w, rows, cols, id, c) : __int_as_float(0x7fc00000);  // quiet NaN
}

// ---- dispatch -----------------------------------------------------------------------------------

template <PackedFormat F>
void launch_matmul(const uint8_t* w, int64_t rows, int64_t cols, const float* x, int64_t n, float* y) {
  if (n <= kSmallN) {
    const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
    packed_gemv_kernel<F><<<detail::to_int(blocks, "packed_matmul blocks"), 32 * kWarpsPerBlock>>>(
        w, rows, cols, x, n, y);
    detail::check_launch("packed_gemv_kernel");
  } else {
    const dim3 grid(detail::to_int((rows + kTileRows - 1) / kTileRows, "packed_matmul row tiles"),
                    detail::to_int((n + kTileN - 1) / kTileN, "packed_matmul x tiles"));
    if (grid.y > 65535) throw std::invalid_argument("packed_matmul_cuda: more than 65535·64 x rows");
    packed_tiled_kernel<F><<<grid, kTiledThreads>>>(w, rows, cols, x, n, y);
    detail::check_launch("packed_tiled_kernel");
  }
}

template <PackedFormat F>
void launch_gather(const uint8_t* w, int64_t rows, int64_t cols, const int32_t* ids, int64_t n, float* out) {
  packed_gather_kernel<F><<<detail::to_int(n, "packed_gather_rows rows"), 256>>>(w, rows, cols, ids, out);
  detail::check_launch("packed_gather_kernel");
}

// Calls fn.template operator()<F>() for the runtime format: one instantiation per format.
template <class Fn>
void dispatch(PackedFormat format, Fn&& fn) {
  switch (format) {
    case PackedFormat::int8_per_row: fn.template operator()<PackedFormat::int8_per_row>(); return;
    case PackedFormat::int4_g128: fn.template operator()<PackedFormat::int4_g128>(); return;
    case PackedFormat::nf4: fn.template operator()<PackedFormat::nf4>(); return;
    case PackedFormat::q8_0: fn.template operator()<PackedFormat::q8_0>(); return;
    case PackedFormat::q4_1: fn.template operator()<PackedFormat::q4_1>(); return;
  }
  throw std::invalid_argument("packed kernels: unknown PackedFormat");
}

void check_ggml_cols(PackedFormat format, int64_t cols, const char* op) {
  if ((format == PackedFormat::q8_0 || format == PackedFormat::q4_1) && cols % packed::kGgmlBlock != 0)
    throw std::invalid_argument(std::string(op) + ": " + format_flag(format) + " rows of " + std::to_string(cols) +
                                " weights, not a multiple of 32");
}

}  // namespace

void packed_matmul_cuda(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols, const float* x,
                        int64_t n, float* y) {
  check_shape("packed_matmul_cuda", rows, cols, n);
  check_ggml_cols(format, cols, "packed_matmul_cuda");
  if (n == 0 || rows == 0) return;
  activate_for("packed_matmul_cuda", w, x, "x", y);
  if (cols == 0) {  // an empty sum
    INFER_CUDA_CHECK(cudaMemset(y, 0, static_cast<std::size_t>(n * rows) * sizeof(float)));
    return;
  }
  dispatch(format, [&]<PackedFormat F>() { launch_matmul<F>(w, rows, cols, x, n, y); });
}

void packed_gather_rows_cuda(PackedFormat format, const uint8_t* w, int64_t rows, int64_t cols,
                             const int32_t* ids, int64_t n, float* out) {
  check_shape("packed_gather_rows_cuda", rows, cols, n);
  check_ggml_cols(format, cols, "packed_gather_rows_cuda");
  if (n == 0 || cols == 0) return;
  activate_for("packed_gather_rows_cuda", w, ids, "ids", out);
  dispatch(format, [&]<PackedFormat F>() { launch_gather<F>(w, rows, cols, ids, n, out); });
}

}  // namespace infer::quant
