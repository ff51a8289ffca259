// The CUDA entry points of a build without CUDA: each says so, in one line, and refuses.
#ifndef INFER_HAVE_CUDA

#include <stdexcept>

#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/device.hpp"

namespace infer::cuda {

static const char* kReason = "this build has no CUDA backend (configure with -DINFER_CUDA=ON where nvcc exists)";

// Without a GPU, the missing device is the news, as in a CUDA build; the build comes second.
std::string unavailable_reason() {
  return nvidia_gpu_present() ? kReason : std::string("no CUDA device found (and ") + kReason + ")";
}
[[noreturn]] static void refuse() { throw std::runtime_error(unavailable_reason()); }
void* alloc(const Device&, std::size_t) { refuse(); }
void free(const Device&, void*) {}
void copy(const Device&, void*, const Device&, const void*, std::size_t) { refuse(); }
void memset_zero(const Device&, void*, std::size_t) { refuse(); }
void synchronize() {}
void matmul_t(const Tensor&, const Tensor&, Tensor&) { refuse(); }
void embedding(const Tensor&, std::span<const int32_t>, Tensor&) { refuse(); }
void rmsnorm(const Tensor&, const Tensor&, float, Tensor&) { refuse(); }
void rope(Tensor&, int, std::span<const int32_t>, float) { refuse(); }
void silu_mul(const Tensor&, const Tensor&, Tensor&) { refuse(); }
void add_inplace(Tensor&, const Tensor&) { refuse(); }
void attention(const Tensor&, const Tensor&, const Tensor&, int, int, int64_t, Tensor&) { refuse(); }
int32_t argmax(const Tensor&) { refuse(); }

}  // namespace infer::cuda

#endif
