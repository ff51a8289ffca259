// The pieces of a Llama block, each as a forward pass and its backward pass.
//
// Written once for a scalar type T: float when training, double when the gradient checks
// compare them with central finite differences (train_kernels.cpp instantiates both). The
// forward passes compute what lib's ops compute, in the same order, so a student copied from
// the teacher gives the teacher's logits.
//
// Conventions (those of llm.c): arrays are row-major, N rows = tokens. A backward takes d_out,
// the gradient of the loss with respect to the forward's output, and what the forward saved,
// and ADDS the gradients of its inputs and weights into dx, dw, ... — the caller zeroes them,
// and contributions from several paths (a residual, q/k/v reading one input) simply add up.
// RoPE is the exception: it works in place, forward and backward.
#pragma once

#include <cstdint>

namespace infer::train {

// Loops over fewer elements than this stay on one thread: waking the team would cost more
// than the work (the tests' tiny models run thousands of such loops).
inline constexpr int64_t kParallelMin = int64_t{1} << 15;

// ---- RMSNorm: y[N, d] = x / rms(x) ⊙ w,  rms(x) = sqrt(mean(x²) + eps) per row
// Saves inv_rms[N] = 1 / rms(x), all the backward needs besides x and w.
template <class T>
void rmsnorm_forward(const T* x, const T* w, int64_t N, int d, double eps, T* y, T* inv_rms);
// With g = d_out ⊙ w and r = inv_rms:  dx += r·g − x · r³ · mean(g ⊙ x),  dw += Σ_rows d_out ⊙ x · r
template <class T>
void rmsnorm_backward(const T* d_out, const T* x, const T* w, const T* inv_rms, int64_t N, int d, T* dx, T* dw);

// ---- Linear: y[N, M] = x[N, K] · Wᵀ, W[M, K]
// (N, K, M stay int: they go straight to BLAS, whose sizes are int.)
template <class T>
void linear_forward(const T* x, const T* W, int N, int K, int M, T* y);
// dx[N, K] += d_out · W,   dW[M, K] += d_outᵀ · x   (two matrix products; a null dW is a frozen
// weight, a null dx an input that needs no gradient)
template <class T>
void linear_backward(const T* d_out, const T* x, const T* W, int N, int K, int M, T* dx, T* dW);

// ---- RoPE, in place on x[N, heads·D]: row r is position r mod seq_len of its sequence (a batch
// is B sequences of seq_len rows). Each pair (x[2j], x[2j+1]) of a head turns by the angle
// position · theta^(−2j/D), the layout of lib's ops::rope.
template <class T>
void rope_forward(T* x, int64_t N, int seq_len, int heads, int D, double theta);
// A rotation's inverse is its transpose: the backward turns d_out by the opposite angle, in place.
template <class T>
void rope_backward(T* d_out, int64_t N, int seq_len, int heads, int D, double theta);

// ---- SwiGLU activation: out[n] = silu(g) ⊙ u,  silu(g) = g · σ(g)
template <class T>
void swiglu_forward(const T* g, const T* u, int64_t n, T* out);
// dg += d_out ⊙ u ⊙ silu'(g),  du += d_out ⊙ silu(g),  silu'(g) = σ(g) · (1 + g · (1 − σ(g)))
template <class T>
void swiglu_backward(const T* d_out, const T* g, const T* u, int64_t n, T* dg, T* du);

// ---- Residual: x_out = x_in + f(x_in) has dx_in = d_out + (f's backward of d_out). Nothing to
// write: the block adds f's input gradient into the same array that already holds d_out.

}  // namespace infer::train
