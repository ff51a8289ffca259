// The CUDA kernels of packed_kernels.hpp in a build without the CUDA backend: they exist, so
// that every caller links, and say so when called (never a silent CPU fallback). The real ones
// are cuda/packed_kernels.cu, compiled instead when INFER_CUDA is on.
#include <stdexcept>

#include "packed_kernels.hpp"

namespace infer::quant {

void packed_matmul_cuda(PackedFormat, const uint8_t*, int64_t, int64_t, const float*, int64_t, float*) {
  throw std::runtime_error("packed_matmul_cuda: built without CUDA (configure with -DINFER_CUDA=ON where nvcc exists)");
}

void packed_gather_rows_cuda(PackedFormat, const uint8_t*, int64_t, int64_t, const int32_t*, int64_t, float*) {
  throw std::runtime_error("packed_gather_rows_cuda: built without CUDA (configure with -DINFER_CUDA=ON where nvcc exists)");
}

}  // namespace infer::quant
