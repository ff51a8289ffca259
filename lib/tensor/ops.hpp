// The operations of the Llama forward pass, on Tensors of any device.
//
// Read tensor/ops_reference.cpp first: every operation below as a plain loop, one thread, no SIMD,
// no BLAS (the reference CPU backend). The fast CPU backend computes the same numbers within a
// stated rounding tolerance (docs/architecture.md, "The plain path and the fast path").
//
// Each function checks shapes, dtypes and that all operands live on one device, then runs that
// device's implementation: on the CPU the backend cpu_backend() names (below), on a GPU
// cuda/cuda_*.cu (CUDA kernels + cuBLAS). Shapes use N for rows (tokens), d for the model
// width, H and H_kv for query and key/value heads, D for the head dimension.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "tensor/tensor.hpp"

namespace infer {

// Which code runs the operations on CPU tensors (tensors on a GPU always run the CUDA backend):
//   fast       ops_cpu.cpp, small_matmul.cpp, cpu_attention.cpp, cpu_silu.cpp: Highway SIMD
//              kernels, OpenBLAS, lib's thread pool, large buffers on huge pages (memory.cpp)
//   reference  ops_reference.cpp: the same operations as plain single-threaded loops
// The environment variable INFER_BACKEND=fast|reference sets the choice a process starts with
// (default fast), so that whole test binaries run on either; every chapter binary's --backend
// flag and set_cpu_backend override it. Choose before the work starts: an operation runs on the
// backend chosen when it is called. cpu::attention over KvRows (chapter 05's paged cache) and
// cpu::sgemm (chapter 08's training) follow the same choice.
enum class CpuBackend { fast, reference };
void set_cpu_backend(CpuBackend backend);
// The current choice. On the first call, INFER_BACKEND unless set_cpu_backend came first; a value
// other than "fast" or "reference" throws std::runtime_error naming it (on every call).
CpuBackend cpu_backend();
std::string_view cpu_backend_name(CpuBackend backend);         // "fast", "reference"
std::optional<CpuBackend> parse_cpu_backend(std::string_view name);  // nullopt for any other name

// Threads used by the fast CPU backend (lib's thread pool, tensor/thread_pool.hpp). Default: all
// cores. The reference backend runs on the calling thread alone.
void set_num_threads(int n);
int num_threads();

// Work done by the operations since the last reset, counted as they run: a count to check
// against a closed-form formula, or to compare between two ways of computing the same thing.
struct OpCounters {
  int64_t matmul_macs = 0;     // multiply-accumulates in matrix products
  int64_t attention_macs = 0;  // in q·k scores and in the probability-weighted sum of values
  int64_t total() const { return matmul_macs + attention_macs; }
};
OpCounters op_counters();
void reset_op_counters();

namespace ops {

// y[N, M] = x[N, K] · w[M, K]ᵀ   (a linear layer; w may be f32, or f16/bf16 on CUDA)
// On the CPU, for N ≤ 16 every row of y has exactly the bits it would have with N = 1, so a
// token computes the same numbers alone, in a decode batch or in a speculative verification.
void matmul_t(const Tensor& x, const Tensor& w, Tensor& y);

// out[N, d] = table[ids[i], :]
void embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out);

// y[N, d] = x / sqrt(mean(x²) + eps) * weight[d]
void rmsnorm(const Tensor& x, const Tensor& weight, float eps, Tensor& y);

// Rotary position embedding, in place, on x[N, n_heads·D]. Row i is at position positions[i].
// Pairs are adjacent elements (x[2j], x[2j+1]) rotated by positions[i] · theta^(-2j/D): the
// layout llama.cpp uses for the llama architecture (its converter permutes q/k weights so
// that this matches the Hugging Face "rotate_half" layout of the original checkpoint).
void rope(Tensor& x, int n_heads, std::span<const int32_t> positions, float theta);  // positions ≥ 0

// out[N, F] = silu(gate) * up, silu(g) = g / (1 + e^-g)   (the SwiGLU activation)
void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out);

// x += y (same shape)
void add_inplace(Tensor& x, const Tensor& y);

// Causal attention of T queries over S keys/values of one sequence.
//   q[T, H·D], k and v [S, H_kv·D] (position-major) or [H_kv, S, D] (head-major) → out[T, H·D]
// Query t sits at position pos0 + t and sees keys 0 … pos0 + t (keys past that are ignored).
// Query head h reads key/value head h / (H / H_kv): grouped-query attention without copying.
void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads,
               int64_t pos0, Tensor& out);

// Index of the largest element of a 1-row tensor (ties: the lowest index).
int32_t argmax(const Tensor& row);

}  // namespace ops
}  // namespace infer
