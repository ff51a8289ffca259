// The operations of the Llama forward pass, on Tensors of any device.
//
// Each function checks shapes, dtypes and that all operands live on one device, then runs that
// device's implementation: ops_cpu.cpp (xtensor + OpenBLAS, threads from set_num_threads) or
// cuda/cuda_*.cu (CUDA kernels + cuBLAS). Shapes use N for rows (tokens), d for the model
// width, H and H_kv for query and key/value heads, D for the head dimension.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/tensor.hpp"

namespace infer {

// Threads used by the CPU backend (lib's thread pool, tensor/thread_pool.hpp). Default: all cores.
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
//   q[T, H·D], k[S, H_kv·D], v[S, H_kv·D] → out[T, H·D]
// Query t sits at position pos0 + t and sees keys 0 … pos0 + t (keys past that are ignored).
// Query head h reads key/value head h / (H / H_kv): grouped-query attention without copying.
void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads,
               int64_t pos0, Tensor& out);

// Index of the largest element of a 1-row tensor (ties: the lowest index).
int32_t argmax(const Tensor& row);

}  // namespace ops
}  // namespace infer
