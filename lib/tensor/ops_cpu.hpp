// The CPU backend of tensor/ops.hpp. Operands are already checked by the dispatch in ops.cpp.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/tensor.hpp"

namespace infer::cpu {

void matmul_t(const Tensor& x, const Tensor& w, Tensor& y);
// C[M, N] = alpha · op(A) · op(B) + beta · C, row-major, op(X) = X or Xᵀ, with op(A) [M, K] and
// op(B) [K, N]: OpenBLAS's sgemm, its work split over lib's thread pool.
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
           float beta, float* C);
void embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out);
void rmsnorm(const Tensor& x, const Tensor& weight, float eps, Tensor& y);
void rope(Tensor& x, int n_heads, std::span<const int32_t> positions, float theta);
void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out);
void add_inplace(Tensor& x, const Tensor& y);
int32_t argmax(const Tensor& row);

}  // namespace infer::cpu
