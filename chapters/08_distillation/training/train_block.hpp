// One Llama block for training: the forward pass that saves its activations, and the backward
// pass that walks the same steps in reverse. Shapes: N = B·S tokens (B sequences of S), d model
// width, H/H_kv heads of size D, F MLP width.
//
//   forward                                 backward, given d_out = ∂loss/∂x_out
//   h1 = rmsnorm(x_in) ⊙ attn_norm          dx_mid = d_out  +  (the MLP's steps backwards, from W_down
//   q, k, v = h1·Wqᵀ, h1·Wkᵀ, h1·Wvᵀ                           to ffn_norm, applied to d_out)
//   rope(q), rope(k)                        dx_in  = dx_mid +  (the attention's steps backwards, from Wo
//   att = attention(q, k, v)                                   through RoPE⁻¹ to attn_norm, of dx_mid)
//   x_mid = x_in + att·Woᵀ
//   h2 = rmsnorm(x_mid) ⊙ ffn_norm          The residual additions hand the gradient down unchanged:
//   a = silu(h2·W_gateᵀ) ⊙ (h2·W_upᵀ)       that identity path is why a deep stack of blocks trains.
//   x_out = x_mid + a·W_downᵀ
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.hpp"

namespace infer::train {

// The nine tensors of a block inside a flat array of parameters (E = T) or read-only (E = const T).
template <class E>
struct BlockTensors {
  E* attn_norm;  // [d]
  E* wq;         // [H·D, d]
  E* wk;         // [H_kv·D, d]
  E* wv;         // [H_kv·D, d]
  E* wo;         // [d, H·D]
  E* ffn_norm;   // [d]
  E* w_gate;     // [F, d]
  E* w_up;       // [F, d]
  E* w_down;     // [d, F]
};

// Elements of one block's parameters, laid out in the order of BlockTensors.
int64_t block_parameter_count(const LlamaConfig& c);
// The tensors of the block whose parameters start at base.
template <class E>
BlockTensors<E> block_tensors(const LlamaConfig& c, E* base);

// What the forward keeps for the backward.
template <class T>
struct BlockActivations {
  std::vector<T> h1, inv_rms1;  // [N, d], [N]
  std::vector<T> q, k, v;       // after RoPE: [N, H·D], [N, H_kv·D], [N, H_kv·D]
  std::vector<T> probs;         // [B, H, S, S]
  std::vector<T> att;           // [N, H·D]
  std::vector<T> x_mid;         // [N, d]
  std::vector<T> h2, inv_rms2;  // [N, d], [N]
  std::vector<T> g, u, a;       // [N, F]
  void resize(const LlamaConfig& c, int B, int S);
};

// x_in[N, d] → x_out[N, d]; fills acts (resized as needed).
template <class T>
void block_forward(const LlamaConfig& c, int B, int S, const BlockTensors<const T>& w, const T* x_in,
                   BlockActivations<T>& acts, T* x_out);

// Adds ∂loss/∂x_in into dx_in and ∂loss/∂weights into dw, given d_out = ∂loss/∂x_out and the
// activations of the forward on x_in.
template <class T>
void block_backward(const LlamaConfig& c, int B, int S, const BlockTensors<const T>& w, const T* x_in,
                    const BlockActivations<T>& acts, const T* d_out, const BlockTensors<T>& dw, T* dx_in);

}  // namespace infer::train
