// The reference CPU backend: every operation of tensor/ops.hpp as a plain loop (ops_reference.cpp).
//
// The file a student reads first. It runs when the CPU backend is "reference" (--backend
// reference, INFER_BACKEND=reference or set_cpu_backend; tensor/ops.hpp); the fast backend
// (ops_cpu.cpp and its kernels) must agree with it within the tolerances tests/unit/test_backends.cpp
// states. Operands are already checked by the dispatch in ops.cpp (and, for sgemm and the KvRows
// attention, by their callers, as for the fast backend's functions of the same names).
#pragma once

#include <cstdint>
#include <span>

#include "tensor/cpu_attention.hpp"  // KvRows
#include "tensor/tensor.hpp"

namespace infer::reference {

void embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out);
void rmsnorm(const Tensor& x, const Tensor& weight, float eps, Tensor& y);
void matmul_t(const Tensor& x, const Tensor& w, Tensor& y);
void rope(Tensor& x, int n_heads, std::span<const int32_t> positions, float theta);
// Over rows found through a KvRows (chapter 05's blocks), and over contiguous k, v [S, H_kv·D].
void attention(const Tensor& q, const cpu::KvRows& kv, int n_heads, int n_kv_heads, int64_t pos0, Tensor& out);
void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads, int64_t pos0,
               Tensor& out);
void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out);
void add_inplace(Tensor& x, const Tensor& y);
int32_t argmax(const Tensor& row);
// C[M, N] = alpha · op(A) · op(B) + beta · C, row-major, op(X) = X or Xᵀ (cpu::sgemm's contract).
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
           float beta, float* C);

}  // namespace infer::reference
