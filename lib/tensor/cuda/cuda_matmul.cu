// y[N, M] = x[N, K] · w[M, K]ᵀ on the GPU: the linear layers, where almost all the time goes.
//
// Three paths:
//   w f32              cublasSgemm (full fp32, no TF32: the parity tests hold it to 1e-4)
//   w f16/bf16, N = 1  our own matrix-vector kernel (below): a decode step reads every weight
//                      once, so it runs at the speed of memory; reading half-size weights
//                      halves its time. x stays f32 and the sums are f32.
//   w f16/bf16, N > 1  x is converted to w's type in a scratch buffer, then cublasGemmEx
//                      multiplies the 16-bit matrices on the tensor cores with f32 sums.
//
// cuBLAS is column-major, our tensors are row-major. A row-major [R, C] matrix is the same
// memory as a column-major [C, R] one, i.e. its transpose. So we ask cuBLAS for
//   yᵀ[M, N] = w[M, K] · xᵀ[K, N]   (column-major view of y)
// where cuBLAS sees w's memory as wᵀ [K, M] (so it transposes it: CUBLAS_OP_T, lda = K) and
// x's memory as xᵀ [K, N] (used as is: CUBLAS_OP_N, ldb = K); y's memory is yᵀ [M, N] (ldc = M).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <map>
#include <mutex>

#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/cuda/cuda_common.cuh"

namespace infer::cuda {
namespace {

void check_blas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed: " + cublasGetStatusString(status));
}
#define INFER_CUBLAS_CHECK(call) check_blas((call), #call)

// One cuBLAS handle per GPU, created on first use and kept for the life of the process
// (creating one costs milliseconds; destroying it at exit races the runtime's own teardown).
cublasHandle_t blas_handle(const Device& device) {
  static std::mutex mutex;
  static std::map<int, cublasHandle_t> handles;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(device.index);
  if (it != handles.end()) return it->second;
  cublasHandle_t handle = nullptr;
  INFER_CUBLAS_CHECK(cublasCreate(&handle));
  // Default math: fp32 products stay fp32 (no silent TF32), 16-bit inputs may use tensor cores.
  INFER_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  handles.emplace(device.index, handle);
  return handle;
}

// ---- 16-bit types ----------------------------------------------------------------------------
// The pair types (__half2, __nv_bfloat162) hold two neighbouring weights in 4 bytes.
template <class T>
struct Half;
template <>
struct Half<__half> {
  using pair = __half2;
  static __device__ float2 to_float2(pair p) { return __half22float2(p); }
  static __device__ __half from_float(float f) { return __float2half_rn(f); }
  static constexpr cudaDataType_t cuda_type = CUDA_R_16F;
};
template <>
struct Half<__nv_bfloat16> {
  using pair = __nv_bfloat162;
  static __device__ float2 to_float2(pair p) { return __bfloat1622float2(p); }
  static __device__ __nv_bfloat16 from_float(float f) { return __float2bfloat16_rn(f); }
  static constexpr cudaDataType_t cuda_type = CUDA_R_16BF;
};

// ---- matrix-vector product for decode --------------------------------------------------------
// y[m] = Σ_k w[m, k] · x[k] with 16-bit w. One warp (32 threads) per output row m: lane l reads
// 8 consecutive weights (one 16-byte load) at columns 8l, 8(l + 32), ..., so the 32 lanes
// together read 512 contiguous bytes per step — the widest, fully coalesced access. Each lane
// sums its products in f32, and a warp shuffle adds the 32 partial sums. With 8 warps per block
// and thousands of rows, every SM has many loads in flight, which is what saturates memory.
// Needs K % 8 == 0 and 16-byte aligned rows (checked on the host; otherwise cuBLAS does it).
constexpr int kGemvWarpsPerBlock = 8;

template <class T>
__global__ void gemv_half_kernel(const T* __restrict__ w, const float* __restrict__ x,
                                 float* __restrict__ y, int m, int k) {
  using Pair = typename Half<T>::pair;
  const int row = blockIdx.x * kGemvWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= m) return;  // the whole warp leaves together, so the shuffles below stay full
  const uint4* w_row = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(row) * k);
  const float4* x8 = reinterpret_cast<const float4*>(x);
  float sum = 0.0f;
  for (int i = lane; i < k / 8; i += 32) {
    const uint4 packed = w_row[i];  // 8 weights
    const Pair* pairs = reinterpret_cast<const Pair*>(&packed);
    const float4 xa = x8[2 * i], xb = x8[2 * i + 1];
    const float2 w0 = Half<T>::to_float2(pairs[0]), w1 = Half<T>::to_float2(pairs[1]);
    const float2 w2 = Half<T>::to_float2(pairs[2]), w3 = Half<T>::to_float2(pairs[3]);
    sum += w0.x * xa.x + w0.y * xa.y + w1.x * xa.z + w1.y * xa.w;
    sum += w2.x * xb.x + w2.y * xb.y + w3.x * xb.z + w3.y * xb.w;
  }
  sum = detail::warp_sum(sum);
  if (lane == 0) y[row] = sum;
}

// dst[i] = (T) src[i], rounding to nearest: the activations for cublasGemmEx.
template <class T>
__global__ void convert_kernel(const float* src, T* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = Half<T>::from_float(src[i]);
}

detail::DeviceBuffer g_converted_x;  // x in w's 16-bit type

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <class T>
void matmul_half(const Tensor& x, const Tensor& w, Tensor& y, int n, int k, int m) {
  const T* wp = static_cast<const T*>(w.raw());
  const float* xp = static_cast<const float*>(x.raw());
  float* yp = static_cast<float*>(y.raw());
  if (n == 1 && k % 8 == 0 && aligned16(wp) && aligned16(xp)) {
    const int threads = 32 * kGemvWarpsPerBlock;
    const int blocks = (m + kGemvWarpsPerBlock - 1) / kGemvWarpsPerBlock;
    gemv_half_kernel<T><<<blocks, threads>>>(wp, xp, yp, m, k);
    detail::check_launch("gemv_half_kernel");
    return;
  }
  const int64_t count = static_cast<int64_t>(n) * k;
  T* x16 = static_cast<T*>(g_converted_x.reserve(x.device(), static_cast<std::size_t>(count) * sizeof(T)));
  convert_kernel<T><<<detail::blocks_for(count, 256), 256>>>(xp, x16, count);
  detail::check_launch("convert_kernel");
  const float one = 1.0f, zero = 0.0f;
  INFER_CUBLAS_CHECK(cublasGemmEx(blas_handle(x.device()), CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one,
                                  wp, Half<T>::cuda_type, k, x16, Half<T>::cuda_type, k, &zero, yp,
                                  CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void matmul_t(const Tensor& x, const Tensor& w, Tensor& y) {
  detail::activate(y.device());
  const int n = detail::to_int(x.dim(0), "matmul_t rows");
  const int k = detail::to_int(x.dim(1), "matmul_t inner size");
  const int m = detail::to_int(w.dim(0), "matmul_t output size");
  detail::f32_ptr(x, "matmul_t", "x");
  detail::f32_ptr(y, "matmul_t", "y");
  if (n == 0 || m == 0) return;
  if (k == 0) {  // an empty sum: y = 0
    INFER_CUDA_CHECK(cudaMemset(y.raw(), 0, y.nbytes()));
    return;
  }
  switch (w.dtype()) {
    case DType::f32: {
      const float one = 1.0f, zero = 0.0f;
      INFER_CUBLAS_CHECK(cublasSgemm(blas_handle(y.device()), CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one,
                                     static_cast<const float*>(w.raw()), k,
                                     static_cast<const float*>(x.raw()), k, &zero,
                                     static_cast<float*>(y.raw()), m));
      break;
    }
    case DType::f16: matmul_half<__half>(x, w, y, n, k, m); break;
    case DType::bf16: matmul_half<__nv_bfloat16>(x, w, y, n, k, m); break;
    case DType::i32:
      throw std::invalid_argument("ops::matmul_t: w is i32, expected f32, f16 or bf16");
  }
}

}  // namespace infer::cuda
