// Row-major matrix products for the training layer, in float (training: lib's sgemm, OpenBLAS
// split over lib's thread pool) and in double (the gradient checks: OpenBLAS on one thread):
//   C[M, N] = alpha · op(A) · op(B) + beta · C,   op(X) = X or Xᵀ,
// where op(A) is [M, K] and op(B) is [K, N]. A private header of ch08_layer (cblas.h is not on
// its users' include path).
#pragma once

#include <cblas.h>

#include "tensor/ops_cpu.hpp"

namespace infer::train {

inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                 const float* B, float beta, float* C) {
  cpu::sgemm(trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
}

inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A,
                 const double* B, double beta, double* C) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

}  // namespace infer::train
