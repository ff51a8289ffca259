#include "train_block.hpp"

#include <algorithm>
#include <iterator>  // std::ssize

#include "train_attention.hpp"
#include "train_kernels.hpp"

namespace infer::train {

int64_t block_parameter_count(const LlamaConfig& c) {
  const int64_t d = c.d_model, qw = c.q_width(), kvw = c.kv_width(), F = c.d_ff;
  return d + qw * d + 2 * kvw * d + d * qw + d + 3 * F * d;
}

template <class E>
BlockTensors<E> block_tensors(const LlamaConfig& c, E* base) {
  const int64_t d = c.d_model, qw = c.q_width(), kvw = c.kv_width(), F = c.d_ff;
  BlockTensors<E> t;
  E* p = base;
  t.attn_norm = p, p += d;
  t.wq = p, p += qw * d;
  t.wk = p, p += kvw * d;
  t.wv = p, p += kvw * d;
  t.wo = p, p += d * qw;
  t.ffn_norm = p, p += d;
  t.w_gate = p, p += F * d;
  t.w_up = p, p += F * d;
  t.w_down = p;
  return t;
}

template <class T>
void BlockActivations<T>::resize(const LlamaConfig& c, int B, int S) {
  // Element counts in int64_t: the products (B·H·S·S above all) may pass 2³¹.
  const int64_t N = int64_t{B} * S, d = c.d_model, F = c.d_ff;
  h1.resize(N * d), h2.resize(N * d), x_mid.resize(N * d);
  inv_rms1.resize(N), inv_rms2.resize(N);
  q.resize(N * c.q_width()), att.resize(q.size());
  k.resize(N * c.kv_width()), v.resize(k.size());
  probs.resize(int64_t{B} * c.n_heads * S * S);
  g.resize(N * F), u.resize(N * F), a.resize(N * F);
}

namespace {
AttentionShape attention_shape(const LlamaConfig& c, int B, int S) {
  return {B, S, c.n_heads, c.n_kv_heads, c.head_dim};
}
}  // namespace

template <class T>
void block_forward(const LlamaConfig& c, int B, int S, const BlockTensors<const T>& w, const T* x_in,
                   BlockActivations<T>& A, T* x_out) {
  A.resize(c, B, S);
  const int N = B * S, d = c.d_model, qw = c.q_width(), kvw = c.kv_width(), F = c.d_ff;
  const int64_t Nd = std::ssize(A.x_mid);  // N·d
  // attention sub-layer
  rmsnorm_forward(x_in, w.attn_norm, N, d, c.norm_eps, A.h1.data(), A.inv_rms1.data());
  linear_forward(A.h1.data(), w.wq, N, d, qw, A.q.data());
  linear_forward(A.h1.data(), w.wk, N, d, kvw, A.k.data());
  linear_forward(A.h1.data(), w.wv, N, d, kvw, A.v.data());
  rope_forward(A.q.data(), N, S, c.n_heads, c.head_dim, c.rope_theta);
  rope_forward(A.k.data(), N, S, c.n_kv_heads, c.head_dim, c.rope_theta);
  attention_forward(A.q.data(), A.k.data(), A.v.data(), attention_shape(c, B, S), A.probs.data(), A.att.data());
  linear_forward(A.att.data(), w.wo, N, qw, d, x_out);  // x_out holds the projection for now
  for (int64_t i = 0; i < Nd; ++i) A.x_mid[i] = x_in[i] + x_out[i];
  // MLP sub-layer
  rmsnorm_forward(A.x_mid.data(), w.ffn_norm, N, d, c.norm_eps, A.h2.data(), A.inv_rms2.data());
  linear_forward(A.h2.data(), w.w_gate, N, d, F, A.g.data());
  linear_forward(A.h2.data(), w.w_up, N, d, F, A.u.data());
  swiglu_forward(A.g.data(), A.u.data(), std::ssize(A.g), A.a.data());
  linear_forward(A.a.data(), w.w_down, N, F, d, x_out);
  for (int64_t i = 0; i < Nd; ++i) x_out[i] += A.x_mid[i];
}

// the-change: begin block_backward
template <class T>
void block_backward(const LlamaConfig& c, int B, int S, const BlockTensors<const T>& w, const T* x_in,
                    const BlockActivations<T>& A, const T* d_out, const BlockTensors<T>& dw, T* dx_in) {
  const int N = B * S, d = c.d_model, qw = c.q_width(), kvw = c.kv_width(), F = c.d_ff;
  const int64_t Nd = std::ssize(A.x_mid), NF = std::ssize(A.g);  // N·d, N·F

  // MLP sub-layer: x_out = x_mid + a·W_downᵀ. The residual passes d_out to x_mid unchanged.
  std::vector<T> dx_mid(d_out, d_out + Nd), da(NF), dg(NF), du(NF), dh(Nd);
  linear_backward(d_out, A.a.data(), w.w_down, N, F, d, da.data(), dw.w_down);
  swiglu_backward(da.data(), A.g.data(), A.u.data(), NF, dg.data(), du.data());
  linear_backward(dg.data(), A.h2.data(), w.w_gate, N, d, F, dh.data(), dw.w_gate);
  linear_backward(du.data(), A.h2.data(), w.w_up, N, d, F, dh.data(), dw.w_up);
  rmsnorm_backward(dh.data(), A.x_mid.data(), w.ffn_norm, A.inv_rms2.data(), N, d, dx_mid.data(), dw.ffn_norm);

  // Attention sub-layer: x_mid = x_in + att·Woᵀ.
  for (int64_t i = 0; i < Nd; ++i) dx_in[i] += dx_mid[i];
  // each gradient has the shape of what it is the gradient of
  std::vector<T> datt(A.att.size()), dq(A.q.size()), dk(A.k.size()), dv(A.v.size());
  linear_backward(dx_mid.data(), A.att.data(), w.wo, N, qw, d, datt.data(), dw.wo);
  attention_backward(datt.data(), A.q.data(), A.k.data(), A.v.data(), A.probs.data(), attention_shape(c, B, S),
                     dq.data(), dk.data(), dv.data());
  rope_backward(dq.data(), N, S, c.n_heads, c.head_dim, c.rope_theta);
  rope_backward(dk.data(), N, S, c.n_kv_heads, c.head_dim, c.rope_theta);
  std::fill(dh.begin(), dh.end(), T(0));
  linear_backward(dq.data(), A.h1.data(), w.wq, N, d, qw, dh.data(), dw.wq);
  linear_backward(dk.data(), A.h1.data(), w.wk, N, d, kvw, dh.data(), dw.wk);
  linear_backward(dv.data(), A.h1.data(), w.wv, N, d, kvw, dh.data(), dw.wv);
  rmsnorm_backward(dh.data(), x_in, w.attn_norm, A.inv_rms1.data(), N, d, dx_in, dw.attn_norm);
}
// the-change: end block_backward

template BlockTensors<float> block_tensors<float>(const LlamaConfig&, float*);
template BlockTensors<const float> block_tensors<const float>(const LlamaConfig&, const float*);
template BlockTensors<double> block_tensors<double>(const LlamaConfig&, double*);
template BlockTensors<const double> block_tensors<const double>(const LlamaConfig&, const double*);
template struct BlockActivations<float>;
template struct BlockActivations<double>;
template void block_forward<float>(const LlamaConfig&, int, int, const BlockTensors<const float>&, const float*,
                                   BlockActivations<float>&, float*);
template void block_forward<double>(const LlamaConfig&, int, int, const BlockTensors<const double>&, const double*,
                                    BlockActivations<double>&, double*);
template void block_backward<float>(const LlamaConfig&, int, int, const BlockTensors<const float>&, const float*,
                                    const BlockActivations<float>&, const float*, const BlockTensors<float>&, float*);
template void block_backward<double>(const LlamaConfig&, int, int, const BlockTensors<const double>&, const double*,
                                     const BlockActivations<double>&, const double*, const BlockTensors<double>&,
                                     double*);

}  // namespace infer::train
