// y[n, m] = x[n, k] · w[m, k]ᵀ for a few rows of x: one decode token (n = 1), a batch of decoding
// sequences, or a speculative verification of γ + 1 positions.
//
// Such a product costs reading all of w once: it runs at the speed of memory, not arithmetic,
// as long as each weight, once loaded, is used for every row of x. OpenBLAS's sgemm instead
// repacks w on every call, which for n ≤ 16 costs more than the product. ops::matmul_t uses this
// kernel for n ≤ kSmallN and sgemm above (tests/bench/bench_matmul measures the crossover).
//
// Exactness: each output y[t, j] is summed the same way — the same products in the same order —
// whatever n is and whichever thread computes it. So a token gets exactly the same bits whether
// it is multiplied alone or beside 15 others: batched decode and speculative verification equal
// one-token decode steps bit for bit (tests/unit/test_ops.cpp checks it).
#pragma once

namespace infer::cpu {

constexpr int kSmallN = 16;

// n ≤ kSmallN (std::invalid_argument above: the kernel keeps a running sum per row of x).
void matmul_small_n(int n, int m, int k, const float* w, const float* x, float* y);

}  // namespace infer::cpu
