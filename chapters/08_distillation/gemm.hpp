// Row-major matrix products for the training layer, in float (training) and in double (the
// gradient checks), through the same BLAS that lib's forward pass uses:
//   C[M, N] = alpha · op(A) · op(B) + beta · C,   op(X) = X or Xᵀ,
// where op(A) is [M, K] and op(B) is [K, N]. A private header of ch08_layer (cblas.h is not on
// its users' include path).
#pragma once

#include <cblas.h>

namespace infer::train {

inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                 const float* B, float beta, float* C) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A,
                 const double* B, double beta, double* C) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

}  // namespace infer::train
